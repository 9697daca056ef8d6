package sqsmove

import (
	"errors"
	"fmt"
	"os"
)

// ErrJournalLocked is the error of LockJournal when another run writes the
// journal.
var ErrJournalLocked = errors.New("another run is writing this journal")

// LockJournal takes the exclusive right to write the journal at path, so
// that two runs never append to one journal at once (one would cut the
// other's line in progress for a torn one). The lock is path + ".lock"; the
// returned function releases it and removes that file.
func LockJournal(path string) (unlock func(), err error) {
	lock := path + ".lock"
	f, err := lockFile(lock)
	if err != nil {
		if errors.Is(err, ErrJournalLocked) {
			return nil, fmt.Errorf("journal %s: %w (its lock %s is taken; wait for that run to end%s)", path, err, lock, staleHint)
		}
		return nil, fmt.Errorf("lock journal %s: %w", path, err)
	}
	return func() {
		os.Remove(lock)
		f.Close()
	}, nil
}
