package sqsmove_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/deadletter/deadletter/internal/sqsmove"
)

// A run killed while its journal's buffer was being written
// leaves a torn last line (the bufio.Writer flushes a full 4 KiB buffer,
// which usually ends mid-line, between syncs). ReadJournal forgives a torn
// *last* line, and the resume runs. But the resume appends its own events
// right after the fragment, without starting a new line: its "run" event
// is glued to the fragment, and the next resume (needed whenever the first
// one is interrupted too, or exits 3 with messages still held) refuses the
// journal: "line N is not a journal event". The journal can never be
// resumed again.
func TestJournalWithATornLineResumesTwice(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.ndjson")
	j, err := sqsmove.OpenJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	j.Write(sqsmove.Event{Event: sqsmove.EvRun})
	j.Write(sqsmove.Event{Event: sqsmove.EvHeld, IDs: []string{"a", "b", "c"}, Until: "2025-11-14T09:00:00Z"})
	j.Write(sqsmove.Event{Event: sqsmove.EvSend, Batch: 1, IDs: []string{"a"}})
	j.Write(sqsmove.Event{Event: sqsmove.EvSent, Batch: 1, ID: "a", NewID: "x"})
	j.Close()
	// The kill: half of the next event reached the file.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"time":"2025-11-14T08:59:00Z","event":"dele`)
	f.Close()

	// Resume 1 reads it (the torn last line is forgiven) ...
	r, err := sqsmove.ReadJournal(path)
	if err != nil || !r.Moved["a"] {
		t.Fatalf("resume 1: %v %+v", err, r)
	}
	// ... and appends to it, as `replay --resume` does, then is killed too.
	j, err = sqsmove.OpenJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	j.Write(sqsmove.Event{Event: sqsmove.EvRun})
	j.Write(sqsmove.Event{Event: sqsmove.EvHeld, IDs: []string{"b", "c"}, Until: "2025-11-14T10:00:00Z"})
	j.Close()

	// Resume 2 must still be able to read the journal, and know that
	// resume 1 held b and c.
	r, err = sqsmove.ReadJournal(path)
	if err != nil {
		t.Fatalf("resume 2 cannot read the journal: %v", err)
	}
	if !r.Held["b"] || r.HeldUntil.Format("15:04") != "10:00" {
		t.Errorf("resume 2 does not know what resume 1 held: held %v until %s", r.Held, r.HeldUntil)
	}
}
