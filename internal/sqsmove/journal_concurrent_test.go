package sqsmove_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/deadletter/deadletter/internal/sqsmove"
)

// Two runs append to the same journal at once (a second
// `replay --resume J` started while the first is still running, or two
// replays given the same `--journal FILE`; nothing locks the journal).
// The first run's bufio.Writer flushes a full 4 KiB buffer as soon as a
// long event (a "held" line of up to 500 ids) overflows it, so a partial
// line sits at the end of the file while that run is still writing it.
// The second run's OpenJournal takes that live partial line for a torn
// line and cuts it off; the first run then appends the rest of its line,
// which becomes a fragment in the middle of the journal. ReadJournal
// refuses a bad line that is not the last one: the journal can never be
// resumed again, and the operator loses the record of which messages are
// in both their target and the DLQ (a fresh replay would send them twice,
// unlisted). A journal should be locked (or refused) while another run
// writes it.
func TestConcurrentRunsOnOneJournalKeepItReadable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.ndjson")
	a, err := sqsmove.OpenJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, 100)
	for i := range ids {
		ids[i] = fmt.Sprintf("4f1c2e9a-%04d-4b7e-9d3c-1a2b3c4d5e6f", i)
	}
	// Run A: its run line, then held lines until one overflows the
	// buffer: the first 4 KiB reach the file, the rest of that line waits
	// in the buffer for the next sync.
	a.Write(sqsmove.Event{Event: sqsmove.EvRun, Target: "https://sqs/q/push-dlq"})
	for i := 0; i < len(ids); i += 20 {
		a.Write(sqsmove.Event{Event: sqsmove.EvHeld, IDs: ids[i : i+20], Until: "2025-11-14T09:00:00Z"})
	}

	// Run B starts on the same journal while A is writing.
	b, err := sqsmove.OpenJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	b.Write(sqsmove.Event{Event: sqsmove.EvRun, Target: "https://sqs/q/push-dlq"})
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	// A syncs its held line (write-ahead, before its first send) and sends.
	if err := a.Sync(); err != nil {
		t.Fatal(err)
	}
	a.Write(sqsmove.Event{Event: sqsmove.EvSend, Batch: 1, IDs: ids[:1]})
	a.Write(sqsmove.Event{Event: sqsmove.EvSent, Batch: 1, ID: ids[0], NewID: "n0"})
	a.Close()
	b.Close()

	r, err := sqsmove.ReadJournal(path)
	if err != nil {
		t.Fatalf("a journal written by two runs at once cannot be resumed: %v", err)
	}
	if !r.Moved[ids[0]] {
		t.Errorf("the journal lost run A's sent event for %s: a resume would send it again", ids[0])
	}
}
