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
	return f, nil
}
