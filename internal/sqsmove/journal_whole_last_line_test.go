package sqsmove_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/deadletter/deadletter/internal/sqsmove"
)

// The bufio.Writer flushes a full 4 KiB buffer whenever an event
// overflows it, so a SIGKILL can leave a last line that is a whole event
// but lacks only its '\n' (the buffer ended right before it). ReadJournal
// reads that line as an event (the resume acts on it: here, "sent X", so X
// is deleted from the DLQ rather than sent again), but OpenJournal takes
// it for a torn line and cuts it off before appending. The two disagree:
// the event the resume relied on is gone from the journal, and the next
// resume (the first one exits 3 with X still held elsewhere, say) finds X
// with a "send" and no outcome, and sends it again as uncertain, although
// the journal had recorded that X reached its target. A last line that
// parses should be completed with a '\n', not cut.
func TestWholeLastLineWithoutNewlineIsKept(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.ndjson")
	journal := `{"time":"2025-11-14T09:00:00Z","event":"run"}
{"time":"2025-11-14T09:00:00Z","event":"held","ids":["x"],"until":"2025-11-14T09:02:00Z"}
{"time":"2025-11-14T09:00:01Z","event":"send","batch":1,"ids":["x"],"target":"https://sqs/q/P1"}
{"time":"2025-11-14T09:00:01Z","event":"sent","batch":1,"id":"x","target":"https://sqs/q/P1","new_id":"n"}`
	if err := os.WriteFile(path, []byte(journal), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := sqsmove.ReadJournal(path)
	if err != nil || !r.Moved["x"] {
		t.Fatalf("the resume reads x as sent: %v %v", r.Moved, err)
	}
	// The resume opens the journal to append to it.
	j, err := sqsmove.OpenJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	j.Write(sqsmove.Event{Event: sqsmove.EvRun})
	j.Close()
	r, err = sqsmove.ReadJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Moved["x"] || r.Uncertain["x"] {
		t.Errorf("after the resume opened the journal, x is no longer sent (moved %v, uncertain %v): the next resume sends it again", r.Moved["x"], r.Uncertain["x"])
	}
}
