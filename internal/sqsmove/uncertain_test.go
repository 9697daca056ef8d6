package sqsmove_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/sqsmove"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// The third SendMessageBatch (the first after the two canaries) reaches
// SQS, but its reply is lost. Its messages must be journalled, counted and
// reported as uncertain: not failed (a resume would send them again
// without saying so), not sent (they were never confirmed, so they stay in
// the DLQ), and not sent again by the SDK's retry behind our back.
func TestLostReplyIsUncertain(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 30, false)
	var mu sync.Mutex
	var lost []string // bodies of the batch whose reply was dropped
	drop := testsupport.NewDropReplyProxy(t, testsupport.SQSEndpoint(t), func(op string, nth int, body []byte) bool {
		if op != "SendMessageBatch" || nth != 3 {
			return false
		}
		mu.Lock()
		defer mu.Unlock()
		for _, e := range gjson.GetBytes(body, "Entries").Array() {
			lost = append(lost, e.Get("MessageBody").Str)
		}
		return true
	})
	counts, results, err := f.run(context.Background(), func(r *sqsmove.Replayer) {
		r.API = testsupport.SQSClientAt(drop.URL)
		r.Concurrency = 1
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(lost) == 0 || drop.Dropped("SendMessageBatch") != 1 {
		t.Fatalf("no reply was dropped (%d sends)", drop.Calls("SendMessageBatch"))
	}
	// 2 canaries + ceil(9/10) batches per target; the dropped one is not
	// sent again.
	if n := drop.Calls("SendMessageBatch"); n != 4 {
		t.Errorf("%d SendMessageBatch calls, want 4: a send whose reply was lost must not be retried", n)
	}
	if counts.Uncertain != len(lost) || counts.Failed != 0 || counts.Sent != 20-len(lost) {
		t.Errorf("counts %+v, want %d uncertain, 0 failed", counts, len(lost))
	}
	var uncertainIDs []string
	for _, r := range results {
		if r.Outcome == sqsmove.OutcomeUncertain {
			uncertainIDs = append(uncertainIDs, r.Msg.MessageID)
			if !slices.Contains(lost, r.Msg.Body) || r.Err == nil {
				t.Errorf("uncertain result %+v", r)
			}
		}
	}
	if len(uncertainIDs) != len(lost) {
		t.Errorf("%d uncertain results, want %d", len(uncertainIDs), len(lost))
	}
	// The journal says so, and a resume reads them as uncertain.
	raw, _ := os.ReadFile(f.journal)
	if n := strings.Count(string(raw), `"event":"uncertain"`); n != len(lost) {
		t.Errorf("%d uncertain events in the journal, want %d", n, len(lost))
	}
	res, err := sqsmove.ReadJournal(f.journal)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(uncertainIDs)
	if got := keys(res.Uncertain); !slices.Equal(got, uncertainIDs) {
		t.Errorf("journal uncertain %v, want %v", got, uncertainIDs)
	}
	// They are in their target (the send took effect) and still in the
	// DLQ (never confirmed, so never deleted): the possible duplicates.
	places := f.where()
	for _, b := range f.bodies {
		want := []string{gjson.Get(b, "to").Str}
		if want[0] == "none" {
			want = []string{"dlq"}
		}
		if slices.Contains(lost, b) {
			want = append(want, "dlq")
		}
		got := places[b]
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s is in %v, want %v", b, got, want)
		}
	}
}

// --rate holds from the first second: no one-second window (measured
// where the requests arrive, with 100 ms of slack for scheduling) sees
// more than the rate.
func TestRateHoldsFromTheFirstSecond(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 60, false)
	type send struct {
		at time.Time
		n  int
	}
	var mu sync.Mutex
	var sends []send
	f.proxy.SetHook(func(op string, body []byte) ([]byte, *testsupport.Reply) {
		if op == "SendMessageBatch" {
			mu.Lock()
			sends = append(sends, send{time.Now(), int(gjson.GetBytes(body, "Entries.#").Int())})
			mu.Unlock()
		}
		return nil, nil
	})
	const rate = 20
	counts, _, err := f.run(context.Background(), func(r *sqsmove.Replayer) { r.Rate = rate })
	if err != nil || counts.Sent != 40 {
		t.Fatalf("counts %+v err %v", counts, err)
	}
	for i, s := range sends {
		n := 0
		for _, o := range sends[i:] {
			if o.at.Sub(s.at) < 900*time.Millisecond {
				n += o.n
			}
		}
		if n > rate {
			t.Fatalf("%d messages within 0.9 s of send %d (at %s), want at most %d", n, i, s.at.Sub(sends[0].at), rate)
		}
	}
	if took := sends[len(sends)-1].at.Sub(sends[0].at); took < time.Second {
		t.Errorf("40 messages at %d/s took %s", rate, took)
	}
}

// The journal tells a resume which messages an interrupted run still
// holds and until when; a run that ended with a summary holds nothing.
func TestJournalHeldUntil(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "j.ndjson")
	j, err := sqsmove.OpenJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	t1, t2 := "2025-11-14T09:00:00Z", "2025-11-14T09:01:00Z"
	// Run 1 holds a..e, sends a and b (b's reply is lost), deletes a,
	// extends its hold and is killed.
	j.Write(sqsmove.Event{Event: sqsmove.EvRun})
	j.Write(sqsmove.Event{Event: sqsmove.EvHeld, IDs: []string{"a", "b", "c", "d", "e"}, Until: t1})
	j.Write(sqsmove.Event{Event: sqsmove.EvSend, IDs: []string{"a", "b"}})
	j.Write(sqsmove.Event{Event: sqsmove.EvSent, ID: "a"})
	j.Write(sqsmove.Event{Event: sqsmove.EvUncertain, ID: "b"})
	j.Write(sqsmove.Event{Event: sqsmove.EvDeleted, ID: "a"})
	j.Write(sqsmove.Event{Event: sqsmove.EvHoldUntil, Until: t2})
	j.Sync()
	r, err := sqsmove.ReadJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := keys(r.Held); !slices.Equal(got, []string{"b", "c", "d", "e"}) || r.HeldUntil.Format(time.RFC3339) != t2 || r.Interrupted != 1 {
		t.Fatalf("held %v until %s, %d interrupted", got, r.HeldUntil, r.Interrupted)
	}
	if !slices.Equal(keys(r.Uncertain), []string{"b"}) || !slices.Equal(keys(r.Moved), []string{"a"}) {
		t.Fatalf("uncertain %v moved %v", keys(r.Uncertain), keys(r.Moved))
	}
	// Run 2 (a resume) holds b, c and d, and ends with a summary: only e,
	// which it never saw, may still be held by run 1.
	j.Write(sqsmove.Event{Event: sqsmove.EvRun})
	j.Write(sqsmove.Event{Event: sqsmove.EvHeld, IDs: []string{"b", "c", "d"}, Until: "2025-11-14T10:00:00Z"})
	j.Write(sqsmove.Event{Event: sqsmove.EvSummary})
	j.Close()
	r, err = sqsmove.ReadJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := keys(r.Held); !slices.Equal(got, []string{"e"}) || r.HeldUntil.Format(time.RFC3339) != t2 {
		t.Fatalf("after the resume: held %v until %s", got, r.HeldUntil)
	}
}
