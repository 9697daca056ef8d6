package sqsmove

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// encodeBoth returns appendEvent's bytes and json.Marshal's for ev
// at tm.
func encodeBoth(t testing.TB, tm time.Time, ev Event) (got, want []byte) {
	w := ev
	w.Time = tm.Format(time.RFC3339Nano)
	want, err := json.Marshal(w)
	if err != nil {
		t.Fatal(err)
	}
	got, err = appendEvent(nil, tm, &ev)
	if err != nil {
		t.Fatal(err)
	}
	return got, want
}

// Every single byte, and every hostile sequence, in every string field of
// an event: the hand-written encoder writes json.Marshal's bytes, and the
// line reads back as the same event (ids and errors are compared by the
// resume by their JSON-decoded text, so equal bytes are what counts).
func TestAppendEventEncodesEveryByte(t *testing.T) {
	var odd []string
	for c := range 256 {
		odd = append(odd, string([]byte{byte(c)}), "a"+string([]byte{byte(c)})+"z")
	}
	odd = append(odd, "\u2028", "\u2029", "x\u2028y\u2029", "\xe2\x80", "\xe2\x80\xa8\xff", "\xed\xa0\x80", // a surrogate half
		"\xf4\x90\x80\x80", "\ufffd", "\U0001F600", "</script>", "&amp;", "\\u0000", `\"`, strings.Repeat("\x00<>&\u2028\xff", 500))
	tms := []time.Time{
		time.Date(2026, 11, 23, 6, 0, 0, 0, time.UTC),
		time.Date(2026, 11, 23, 6, 0, 0, 1, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), // a year of five digits
		time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC),
	}
	for _, tm := range tms {
		for _, s := range odd {
			for _, ev := range []Event{
				{Event: EvSent, Batch: 1 << 62, ID: s, Target: s, NewID: s},
				{Event: EvSend, Batch: -7, IDs: []string{s, "", s}},
				{Event: EvSendFailed, ID: s, Error: s, Until: s},
				{Event: s, Info: map[string]any{s: s, "n": []string{s}}},
				{Event: EvRun, Info: (*struct{ A string })(nil)}, // a typed nil: "info":null in both
				{Event: EvRun, Info: map[string]int{}},
			} {
				got, want := encodeBoth(t, tm, ev)
				if string(got) != string(want) {
					t.Fatalf("appendEvent(%q):\n got %q\nwant %q", s, got, want)
				}
			}
		}
	}
}

func FuzzAppendEventMatchesMarshal(f *testing.F) {
	f.Add("sent", int64(3), "id", "id2", "t", "n", "u", "e\xff\u2028<>&", int64(0))
	f.Add("", int64(0), "", "", "", "", "", "", int64(-1))
	f.Fuzz(func(t *testing.T, event string, batch int64, id, id2, target, newID, until, errText string, ns int64) {
		tm := time.Unix(0, ns).UTC()
		for _, ev := range []Event{
			{Event: event, Batch: batch, ID: id, IDs: []string{id, id2}, Target: target, NewID: newID, Until: until, Error: errText},
			{Event: event, Info: map[string]string{id: errText}},
			{Event: event, Info: errText},
		} {
			got, want := encodeBoth(t, tm, ev)
			if string(got) != string(want) {
				t.Fatalf("appendEvent:\n got %q\nwant %q", got, want)
			}
			var back Event
			if err := json.Unmarshal(got, &back); err != nil {
				t.Fatalf("%q does not decode: %v", got, err)
			}
		}
	})
}

// A journal whose writes start failing in the middle of a run (the disk
// fills, the file is gone read-only): the Sync that wrote and every later
// one fail, whichever goroutine joined which group, and nothing is
// reported durable that is not in the file.
func TestJournalWriteFailingMidGroupReportsNothingUndurable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.ndjson")
	j, err := OpenJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Write(Event{Event: EvSend, Batch: 1, IDs: []string{"before"}}); err != nil {
		t.Fatal(err)
	}
	if err := j.Sync(); err != nil {
		t.Fatal(err)
	}
	// From now on every write to the journal fails (EBADF): as a full disk.
	ro, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	good := j.f
	j.mu.Lock()
	j.f = ro
	j.mu.Unlock()
	defer good.Close()

	var wg sync.WaitGroup
	var mu sync.Mutex
	var nilSyncs, errSyncs int
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				_ = j.Write(Event{Event: EvSend, Batch: int64(w*100 + i), IDs: []string{strings.Repeat("x", 3000)}})
				err := j.Sync()
				mu.Lock()
				if err == nil {
					nilSyncs++
				} else {
					errSyncs++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if nilSyncs != 0 {
		t.Errorf("%d Syncs returned nil after the journal's writes began to fail (%d failed): a send would go out without its record", nilSyncs, errSyncs)
	}
	if err := j.syncTo(1); err == nil {
		t.Error("syncTo of what was durable before the failure: nil; want the sticky error (no more sends)")
	}
	if err := j.Write(Event{Event: EvSend, Batch: 9999, IDs: []string{strings.Repeat("y", journalBuffer)}}); err == nil {
		t.Error("a Write that fills the buffer after the failure: nil error")
	}
	if err := j.Sync(); err == nil || !errors.Is(err, os.ErrClosed) && !strings.Contains(err.Error(), "write journal") {
		t.Errorf("Sync after the failure: %v; want the write error", err)
	}
	r, err := ReadJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Uncertain["before"] || r.Lines != 1 {
		t.Errorf("the journal after the failure: %d lines, uncertain %v; want the one line synced before", r.Lines, r.Uncertain)
	}
}
