package pushdlq_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/deadletter/deadletter/internal/pushpolicy"
	"github.com/deadletter/deadletter/internal/sqsmove"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// The target queue deleted in the middle of an invocation, between its two
// batches to that queue: the batch that reached it is sent and never a
// batch item failure; every record of the other is one. Once the queue is
// back, the retried records arrive, and every message is in P1 once.
func TestTargetDeletedBetweenBatchesLosesNothing(t *testing.T) {
	f := newFixture(t, "1004", 1)
	var bodies []string
	for i := range 15 {
		bodies = append(bodies, body(1, inWindow+int64(i), 1004, fmt.Sprint("d-", i)))
	}
	ev := f.seed(bodies...)
	p1 := pushpolicy.TargetURL(f.base, 1)
	var calls atomic.Int32
	firstDone := make(chan struct{})
	var once sync.Once
	f.proxy.SetAfter(func(op string, req, resp []byte) []byte {
		if op == "SendMessageBatch" && strings.Contains(string(req), sqsmove.Name(p1)) {
			once.Do(func() { close(firstDone) })
		}
		return resp
	})
	f.proxy.SetHook(func(op string, b []byte) ([]byte, *testsupport.Reply) {
		if op == "SendMessageBatch" && strings.Contains(string(b), sqsmove.Name(p1)) && calls.Add(1) == 2 {
			<-firstDone // the first batch is in P1: delete it now
			if _, err := f.c.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(p1)}); err != nil {
				t.Error(err)
			}
		}
		return nil, nil
	})
	failed, lines, _ := f.handle(ev)
	nSent, nFailed := 0, 0
	for id, l := range lines {
		switch {
		case l.Outcome == "sent" && !failed[id]:
			nSent++
		case l.Outcome == "failed" && failed[id]:
			nFailed++
		default:
			t.Errorf("%s logged %+v, batch item failure %v", id, l, failed[id])
		}
	}
	if calls.Load() != 2 || nSent == 0 || nFailed == 0 || nSent+nFailed != 15 {
		t.Fatalf("%d calls to P1, %d sent, %d failed: want one batch each way", calls.Load(), nSent, nFailed)
	}
	f.deleteDone(ev, failed)
	f.proxy.SetHook(nil)
	f.proxy.SetAfter(nil)
	testsupport.CreateQueue(t, f.c, sqsmove.Name(p1), nil)
	// The ESM redelivers the failed records.
	var again events.SQSEvent
	for _, r := range ev.Records {
		if failed[r.MessageId] {
			again.Records = append(again.Records, r)
		}
	}
	if failed2, _, _ := f.handle(again); len(failed2) != 0 {
		t.Fatalf("redelivery: batch item failures %v", failed2)
	}
	// The sent batch went to the deleted queue, and is gone with it: what
	// the recreated P1 holds is exactly the retried ones.
	got := f.queue(1)
	for _, r := range again.Records {
		if m := marker(r.Body); got[m] != 1 {
			t.Errorf("%s is in P1 %d times", m, got[m])
		}
	}
	if len(got) != nFailed {
		t.Errorf("P1 holds %v, want the %d retried", got, nFailed)
	}
}
