package sqsmove_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/sqsmove"
)

// A streamed replay sends its partial batches when a receive finds the DLQ
// drained (OnEmpty), while the scan's last long poll is still out, not
// after the scan: the test holds the scan inside OnEmpty (no receive can
// end it meanwhile) until every routed message offered so far was sent.
// Nothing is sent twice, the journal has each message's held and send
// records first, and Finish has nothing left to send.
func TestStreamSendsPartialBatchesWhileTheScanStillRuns(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 12, false) // 4 to P1, 4 to P2, 4 routed nowhere: after each canary, two partial batches of 3
	ctx := context.Background()
	hold := f.newHold(f.api, 60*time.Second)
	j, err := sqsmove.OpenJournal(f.journal)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()

	var (
		mu     sync.Mutex
		sentBy = map[string]int{}
		change = make(chan struct{}, 64)
	)
	r := &sqsmove.Replayer{API: f.api, Hold: hold, Source: f.dlq, Journal: j, Concurrency: 4,
		OnResult: func(res sqsmove.Result) {
			if res.Outcome != sqsmove.OutcomeSent {
				t.Errorf("%s: %s (%v)", res.Msg.Body, res.Outcome, res.Err)
			}
			mu.Lock()
			sentBy[res.Msg.MessageID]++
			mu.Unlock()
			change <- struct{}{}
		}}
	var (
		stream     *sqsmove.Stream
		offered    []string // ids of routed messages offered so far
		flushed    int      // OnEmpty calls that found something to wait for
		duringScan int      // routed messages sent before the scan ended
	)
	onEmpty := func() {
		if stream == nil {
			return
		}
		stream.Flush()
		want := len(offered)
		deadline := time.After(30 * time.Second) // a hang guard, not a timing assertion
		for {
			mu.Lock()
			n := len(sentBy)
			mu.Unlock()
			if n >= want {
				break
			}
			select {
			case <-change:
			case <-deadline:
				t.Errorf("the scan is still on and %d of the %d routed messages offered were sent: the partial batches wait for the end of the scan", n, want)
				return
			}
		}
		flushed++
		duringScan = want
	}
	err = hold.Receive(ctx, sqsmove.ReceiveOptions{Wait: time.Second, Receivers: 2, OnEmpty: onEmpty}, func(ord int, m *sqsmove.Message) bool {
		rt := f.route(m)
		if stream == nil {
			if rt.Target == "" {
				return false
			}
			if stream, err = r.Start(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if rt.Target != "" {
			offered = append(offered, m.MessageID)
		}
		stream.Offer(ord, m, rt)
		return false
	})
	if err != nil {
		t.Fatal(err)
	}
	if stream == nil {
		t.Fatal("nothing routed was received")
	}
	counts, err := stream.Finish()
	if err != nil {
		t.Fatal(err)
	}
	f.release(hold)
	if len(offered) != 8 || counts.Sent != 8 || duringScan != 8 || flushed == 0 {
		t.Errorf("offered %d, counts %+v, %d sent while the scan ran (OnEmpty waited %d times): want all 8 routed sent during the scan", len(offered), counts, duringScan, flushed)
	}
	for id, n := range sentBy {
		if n != 1 {
			t.Errorf("%s reported sent %d times", id, n)
		}
	}
	// Batches of 10 at most: per target the canary and one batch of the
	// other three, unless a receive split them (still far below one each).
	if calls := f.proxy.Calls(); calls["SendMessageBatch"] > 6 {
		t.Errorf("calls %v: partial batches sent more than once", calls)
	}
	f.wantEachOnce(nil)
	wantHeldThenSend(t, f.journal)
}

// wantHeldThenSend checks the journal's write-ahead order: every id of a
// send record was in a held record of its run before it, and sent once.
func wantHeldThenSend(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	held, sent := map[string]bool{}, map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var ev sqsmove.Event
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("journal line %q: %v", line, err)
		}
		switch ev.Event {
		case sqsmove.EvHeld:
			for _, id := range ev.IDs {
				held[id] = true
			}
		case sqsmove.EvSend:
			for _, id := range ev.IDs {
				if !held[id] || sent[id] {
					t.Errorf("%s in a send record: held before %v, in a send record before %v", id, held[id], sent[id])
				}
				sent[id] = true
			}
		}
	}
	if len(sent) != 8 {
		t.Errorf("%d ids in send records, want 8", len(sent))
	}
}
