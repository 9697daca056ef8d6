package main_test

import (
	"os"
	"strings"
	"testing"

	"github.com/deadletter/deadletter/internal/sqsmove"
)

// A second run on a journal another run is writing is refused (exit 2),
// naming the lock, before it reads the DLQ or touches the journal.
func TestSecondRunOnALockedJournalIsRefused(t *testing.T) {
	t.Parallel()
	w := seededWorld(t, 16)
	journal := writeJournal(t, killedHolding(w.dlq, w.ids)...)
	before, _ := os.ReadFile(journal)
	unlock, err := sqsmove.LockJournal(journal) // the first run
	if err != nil {
		t.Fatal(err)
	}
	for _, flag := range []string{"--resume", "--journal"} {
		stdout, stderr, code := w.run(nil, "", w.replayArgs("--yes", flag, journal, "-o", "json")...)
		after, _ := os.ReadFile(journal)
		if code != 2 || !strings.Contains(stderr, journal+".lock") || string(after) != string(before) {
			t.Errorf("%s on a locked journal: exit %d (want 2), journal changed %v, stderr naming the lock: %s%s", flag, code, string(after) != string(before), stderr, stdout)
		}
	}
	unlock()
	if _, stderr, code := w.run(nil, "", w.replayArgs("--yes", "--resume", journal, "-o", "json")...); code == 2 {
		t.Errorf("once the first run ended, a resume is still refused: %s", stderr)
	}
	if _, err := os.Stat(journal + ".lock"); !os.IsNotExist(err) {
		t.Errorf("the lock file is left behind: %v", err)
	}
}
