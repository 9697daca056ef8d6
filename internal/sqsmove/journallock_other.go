//go:build !unix

package sqsmove

import (
	"errors"
	"os"
)

// The lock is a file created exclusively: a run that was killed leaves it.
const staleHint = ", or remove it if no run is going"

func lockFile(name string) (*os.File, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return nil, ErrJournalLocked
	}
	return f, err
}
