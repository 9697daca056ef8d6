package sqsmove_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/sqsmove"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// Concurrency 2, so a batch's delete goes out with the next batch's send:
// the replies of two of those sends are lost (the server took them), and
// so is the reply of a pipelined delete. Nothing may be lost: the
// messages of a send whose reply was lost are uncertain and stay in the
// DLQ (they are in the target too), every other routed message is in its
// target only, and the journal says so (moved, or uncertain), for a
// resume.
func TestLostSendReplyWithPipelinedDeleteLosesNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 150, false)
	var mu sync.Mutex
	lostBodies := map[string]bool{}
	deletesAtLoss := []int{}
	deletes := 0
	drop := testsupport.NewDropReplyProxy(t, testsupport.SQSEndpoint(t), func(op string, nth int, body []byte) bool {
		mu.Lock()
		defer mu.Unlock()
		switch op {
		case "DeleteMessageBatch":
			deletes++
			return nth == 2
		case "SendMessageBatch":
			// The first two sends are the canaries (one message each).
			if nth == 5 || nth == 7 {
				for _, e := range gjson.GetBytes(body, "Entries").Array() {
					lostBodies[e.Get("MessageBody").Str] = true
				}
				deletesAtLoss = append(deletesAtLoss, deletes)
				return true
			}
		}
		return false
	})
	api := testsupport.SQSClientAt(drop.URL)
	hold := f.holdAll(api, 60*time.Second, nil)
	idOf := map[string]string{}
	var resMu sync.Mutex
	counts, err := f.replay(context.Background(), hold, func(r *sqsmove.Replayer) {
		r.API, r.Concurrency = api, 2
		r.OnResult = func(res sqsmove.Result) {
			resMu.Lock()
			idOf[res.Msg.Body] = res.Msg.MessageID
			resMu.Unlock()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	f.release(hold)
	if drop.Dropped("SendMessageBatch") != 2 || drop.Dropped("DeleteMessageBatch") != 1 {
		t.Fatalf("dropped %d send and %d delete replies, want 2 and 1", drop.Dropped("SendMessageBatch"), drop.Dropped("DeleteMessageBatch"))
	}
	if len(lostBodies) == 0 || counts.Uncertain != len(lostBodies) || counts.Sent != 100-len(lostBodies) {
		t.Errorf("counts %+v: want %d uncertain (the lost sends) and the other %d sent", counts, len(lostBodies), 100-len(lostBodies))
	}
	if slices.Max(deletesAtLoss) == 0 {
		t.Errorf("no delete had gone out when the lost sends did (%v): the pipelined path was not exercised", deletesAtLoss)
	}
	res, err := sqsmove.ReadJournal(f.journal)
	if err != nil {
		t.Fatal(err)
	}
	places := f.where()
	for _, b := range f.bodies {
		to := gjson.Get(b, "to").Str
		got := places[b]
		switch {
		case to == "none":
			if !slices.Equal(got, []string{"dlq"}) {
				t.Errorf("%s (not routed) is in %v", b, got)
			}
		case lostBodies[b]:
			// Sent (the server took it) and not deleted: in both places.
			if !slices.Contains(got, "dlq") || !slices.Contains(got, to) || len(got) != 2 {
				t.Errorf("%s (its send reply lost) is in %v, want [dlq %s]", b, got, to)
			}
			if id := idOf[b]; !res.Uncertain[id] || res.Moved[id] {
				t.Errorf("%s: the journal has it uncertain %v, moved %v; want uncertain only", b, res.Uncertain[id], res.Moved[id])
			}
		default:
			if !slices.Equal(got, []string{to}) {
				t.Errorf("%s is in %v, want exactly [%s]", b, got, to)
			}
			if id := idOf[b]; !res.Moved[id] {
				t.Errorf("%s: moved, but the journal does not say so", b)
			}
		}
	}
}
