package sqsmove_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/sqsmove"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// A renewal of the hold refused with "receipt handle invalid" means the
// run no longer holds those messages (another consumer may have received
// them). Here it happens while a batch is in flight: that batch's messages
// reached their target but are not deleted, journalled and reported as
// uncertain (possible duplicates); every other message is never sent
// (hold_lost) and stays in the DLQ.
func TestRenewalRefusedMeansTheHoldIsLost(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 30, false)
	hold := f.holdAll(f.api, 10*time.Second, nil)
	var mu sync.Mutex
	sends, refuse := 0, false
	f.proxy.SetHook(func(op string, body []byte) ([]byte, *testsupport.Reply) {
		mu.Lock()
		defer mu.Unlock()
		switch op {
		case "ChangeMessageVisibilityBatch":
			if !refuse {
				return nil, nil
			}
			var failed []string
			for _, e := range gjson.GetBytes(body, "Entries").Array() {
				failed = append(failed, fmt.Sprintf(`{"Id":%q,"Code":"ReceiptHandleIsInvalid","Message":"injected","SenderFault":true}`, e.Get("Id").Str))
			}
			return nil, &testsupport.Reply{Status: 200, Body: `{"Successful":[],"Failed":[` + strings.Join(failed, ",") + `]}`}
		case "SendMessageBatch":
			sends++
			if sends == 3 { // after the two canaries, while this batch is in flight
				refuse = true
				mu.Unlock()
				if err := hold.Extend(context.Background()); err != nil {
					t.Errorf("extend: %v", err)
				}
				mu.Lock()
			}
		}
		return nil, nil
	})
	var resMu sync.Mutex
	byOutcome := map[sqsmove.Outcome][]string{}
	counts, err := f.replay(context.Background(), hold, func(r *sqsmove.Replayer) {
		r.Concurrency = 1
		r.OnResult = func(res sqsmove.Result) {
			resMu.Lock()
			byOutcome[res.Outcome] = append(byOutcome[res.Outcome], res.Msg.Body)
			resMu.Unlock()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	hold.Release(context.Background())
	if counts.Sent != 2 || counts.Uncertain == 0 || counts.HoldLost == 0 || counts.Sent+counts.Uncertain+counts.HoldLost != 20 || counts.DeleteFailed != 0 {
		t.Fatalf("counts %+v, want the 2 canaries sent, the batch in flight uncertain, the rest hold_lost", counts)
	}
	resume, err := sqsmove.ReadJournal(f.journal)
	if err != nil {
		t.Fatal(err)
	}
	if len(resume.Moved) != 2+counts.Uncertain {
		t.Errorf("journal: %d moved, want the canaries and the %d sent while the hold was lost (a resume deletes them, never sends them again)", len(resume.Moved), counts.Uncertain)
	}
	// Past the visibility timeout, the lost messages are visible again.
	time.Sleep(10 * time.Second)
	uncertain := map[string]bool{}
	for _, b := range byOutcome[sqsmove.OutcomeUncertain] {
		uncertain[b] = true
	}
	places := f.where()
	for _, b := range f.bodies {
		want := []string{gjson.Get(b, "to").Str}
		switch {
		case want[0] == "none", contains(byOutcome[sqsmove.OutcomeHoldLost], b):
			want = []string{"dlq"}
		case uncertain[b]:
			want = []string{"dlq", want[0]}
		}
		if got := places[b]; strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("%s is in %v, want %v", b, got, want)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// A delete refused because the receipt handle is no longer valid means
// another consumer received the message after it was sent: it is a
// possible duplicate (uncertain), journalled as sent, so that a resume
// deletes it without sending it again.
func TestDeleteWithAStaleHandleIsAPossibleDuplicate(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 30, false)
	f.proxy.SetHook(func(op string, body []byte) ([]byte, *testsupport.Reply) {
		if op != "DeleteMessageBatch" {
			return nil, nil
		}
		var failed []string
		for _, e := range gjson.GetBytes(body, "Entries").Array() {
			failed = append(failed, fmt.Sprintf(`{"Id":%q,"Code":"ReceiptHandleIsInvalid","Message":"injected","SenderFault":true}`, e.Get("Id").Str))
		}
		return nil, &testsupport.Reply{Status: 200, Body: `{"Successful":[],"Failed":[` + strings.Join(failed, ",") + `]}`}
	})
	counts, results, err := f.run(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if counts.Uncertain != 20 || counts.Sent != 0 || counts.DeleteFailed != 0 || len(results) != 20 {
		t.Errorf("counts %+v, want the 20 sent messages uncertain", counts)
	}
	r, err := sqsmove.ReadJournal(f.journal)
	if err != nil || len(r.Moved) != 20 {
		t.Errorf("journal: %d moved (%v), want 20: a resume deletes them without sending them again", len(r.Moved), err)
	}
}

// The process is paused past the hold's deadline while a batch is in
// flight (here: its reply comes back after the deadline). Those messages
// were sent while held, but others may have received them since: they are
// not deleted, they are possible duplicates; nothing else is sent.
func TestSendThatReturnsAfterTheDeadlineIsAPossibleDuplicate(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 30, false)
	hold := f.holdAll(f.api, 3*time.Second, nil)
	var mu sync.Mutex
	sends := 0
	f.proxy.SetAfter(func(op string, _, resp []byte) []byte {
		if op != "SendMessageBatch" {
			return resp
		}
		mu.Lock()
		sends++
		n := sends
		mu.Unlock()
		if n == 3 {
			time.Sleep(4 * time.Second) // the reply of the first batch after the canaries: past the deadline
		}
		return resp
	})
	if err := hold.Extend(context.Background()); err != nil { // the deadline is 3 s from now
		t.Fatal(err)
	}
	counts, err := f.replay(context.Background(), hold, func(r *sqsmove.Replayer) { r.Concurrency = 1 })
	if err != nil {
		t.Fatal(err)
	}
	if counts.Sent != 2 || counts.Uncertain == 0 || counts.HoldLost == 0 || counts.Sent+counts.Uncertain+counts.HoldLost != 20 {
		t.Errorf("counts %+v, want the 2 canaries sent, the late batch uncertain, the rest hold_lost", counts)
	}
	resume, err := sqsmove.ReadJournal(f.journal)
	if err != nil || len(resume.Moved) != 2+counts.Uncertain {
		t.Errorf("journal: %d moved (%v), want the canaries and the late batch", len(resume.Moved), err)
	}
}
