package cmdutil

import (
	"os"
	"path/filepath"
)

// WriteFileAtomic writes a whole file through a temporary file in the same
// folder renamed into place, so that a reader never sees half of it and an
// interrupted write leaves the old file (or none). A path that leads
// (through links) to something other than a regular file, such as
// /dev/stdout, a FIFO or a device, is written to as it is: renaming over
// it would replace the device or the link, not write to it. A link to a
// regular file is followed: its target is replaced, not the link.
func WriteFileAtomic(path string, data []byte) error {
	if fi, err := os.Stat(path); err == nil {
		if !fi.Mode().IsRegular() {
			return writeInPlace(path, data)
		}
		if target, err := filepath.EvalSymlinks(path); err == nil {
			path = target
		}
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// writeInPlace writes data to what path leads to, as a shell's > does.
func writeInPlace(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
