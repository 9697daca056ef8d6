package cmdutil

import (
	"os"
	"path/filepath"
)

// WriteFileAtomic writes a whole file through a temporary file in the same
// folder renamed into place, so that a reader never sees half of it and an
// interrupted write leaves the old file (or none).
func WriteFileAtomic(path string, data []byte) error {
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
