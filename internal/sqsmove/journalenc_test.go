package sqsmove

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// The journal's hand-written encoder writes what json.Marshal writes, byte
// for byte, so that a journal of this build is read by every reader as
// before (and one of an earlier build by this one).
func TestAppendEventIsJSONMarshal(t *testing.T) {
	when := []time.Time{
		time.Date(2025, 11, 14, 8, 30, 0, 0, time.UTC),
		time.Date(2025, 11, 14, 8, 30, 0, 123456789, time.UTC),
		time.Date(2025, 11, 14, 8, 30, 0, 120000000, time.UTC),
	}
	odd := []string{"", "a", `quo"te`, `back\slash`, "tab\there", "nl\n", "<script>&</script>", "naïve", "\u2028\u2029", "bad\xffutf8", "\x00\x1f\x7f"}
	events := []Event{
		{Event: EvRun, Target: "http://127.0.0.1:4566/000000000000/dlq", Info: map[string]any{"source": "q", "codes": []string{"*"}, "n": 3}},
		{Event: EvHeld, IDs: []string{"0b6c4f0e-8d4a-4f4e-9a39-1c4f43f0c6a1", "b"}, Until: "2025-11-14T08:32:00.5Z"},
		{Event: EvSend, Batch: 42, Target: "https://sqs.us-east-1.amazonaws.com/1/P1", IDs: []string{"a", "b", "c"}},
		{Event: EvSent, Batch: -1, ID: "a", Target: "t", NewID: "n"},
		{Event: EvSendFailed, Batch: 7, ID: "a", Target: "t", Error: `send to t: AWS.SimpleQueueService.NonExistentQueue: "no" <queue>`},
		{Event: EvSummary, Info: map[string]int{"sent": 1}},
		{Event: EvHeld, IDs: []string{}},
		{Event: EvDeleted},
	}
	for _, s := range odd {
		events = append(events, Event{Event: s, ID: s, IDs: []string{s, s}, Target: s, NewID: s, Until: s, Error: s, Info: s})
	}
	for _, tm := range when {
		for _, ev := range events {
			want := ev
			want.Time = tm.Format(time.RFC3339Nano)
			wb, err := json.Marshal(want)
			if err != nil {
				t.Fatal(err)
			}
			got, err := appendEvent([]byte("prefix"), tm, &ev)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != "prefix"+string(wb) {
				t.Errorf("appendEvent:\n got %s\nwant prefix%s", got, wb)
			}
		}
	}
	if _, err := appendEvent(nil, when[0], &Event{Event: EvRun, Info: func() {}}); err == nil {
		t.Error("an Info that does not marshal: no error")
	}
}

// Group commit: when Sync returns, the caller's lines are in the file,
// whichever concurrent Sync wrote them out (the one that starts an fsync
// writes every buffered line, its own and those of the Syncs waiting).
func TestJournalSyncWritesEveryWaitersLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.ndjson")
	j, err := OpenJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 40 {
				id := fmt.Sprintf("w%d-%d", w, i)
				if err := j.Write(Event{Event: EvSend, Batch: int64(i + 1), IDs: []string{id}}); err != nil {
					errs <- err
					return
				}
				if err := j.Sync(); err != nil {
					errs <- err
					return
				}
				b, err := os.ReadFile(path)
				if err != nil {
					errs <- err
					return
				}
				if !bytes.Contains(b, []byte(`"ids":["`+id+`"]`)) {
					errs <- fmt.Errorf("Sync returned, but the send record of %s is not in the file", id)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := ReadJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	if r.Lines != 8*40 || len(r.Uncertain) != 8*40 {
		t.Errorf("journal: %d lines, %d sends without an outcome; want %d of each", r.Lines, len(r.Uncertain), 8*40)
	}
}
