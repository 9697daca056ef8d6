package sqsmove

import (
	"os"
	"syscall"
)

// dataSync makes what was appended to the journal durable: fdatasync(2),
// not fsync(2). The journal is only ever appended to (O_APPEND), so every
// write that a sync must cover changes the file size, and fdatasync does
// flush a size change: "a change to the file size (st_size …) would require
// a metadata flush" (fdatasync(2)); what it leaves out are the timestamps
// (st_mtime, st_atime), which no reader of the journal looks at. The
// journal's directory entry is covered neither by fsync nor by fdatasync
// (fsync(2)), so that is unchanged.
func dataSync(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		for {
			serr = syscall.Fdatasync(int(fd))
			if serr != syscall.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	if serr != nil {
		return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: serr}
	}
	return nil
}
