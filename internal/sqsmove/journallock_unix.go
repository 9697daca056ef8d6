//go:build unix

package sqsmove

import (
	"errors"
	"os"
	"syscall"
)

// The lock is an flock, released by the system when its process dies.
const staleHint = ""

func lockFile(name string) (*os.File, error) {
	for {
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, err
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				return nil, ErrJournalLocked
			}
			return nil, err
		}
		// The unlock removes the lock file before it closes it: a run that
		// opened the file just before the removal holds the lock of a file
		// no longer there, while another run creates a new one and locks
		// it. The lock counts only if the name still leads to the file
		// locked; else it is taken again on the file the name leads to.
		held, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, err
		}
		now, err := os.Stat(name)
		if err == nil && os.SameFile(held, now) {
			return f, nil
		}
		f.Close()
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
	}
}
