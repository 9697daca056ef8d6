package sqsmove_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/deadletter/deadletter/internal/sqsmove"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// Send, the batch step of a Lambda: per target queue, batches of at most
// 10 entries and 256 KiB; every message arrives once with its attributes
// (from the Lambda event's shape), parked ones with their delay; FIFO
// targets get the group and a deduplication id.
func TestSendBatchesPerTargetByCountAndBytes(t *testing.T) {
	f := newFixture(t, 0, false)
	fifo := testsupport.NewQueue(t, f.c, "sendfifo", true)
	type call struct {
		queue   string
		entries int
		bytes   int
		delays  []int
		groups  int
	}
	var mu sync.Mutex
	var calls []call
	f.proxy.SetHook(func(op string, b []byte) ([]byte, *testsupport.Reply) {
		if op != "SendMessageBatch" {
			return nil, nil
		}
		in := testsupport.ParseSendBatch(t, b)
		c := call{queue: in.QueueUrl, entries: len(in.Entries)}
		for _, e := range in.Entries {
			c.bytes += len(e.MessageBody)
			for k, a := range e.MessageAttributes {
				c.bytes += len(k) + len(a.DataType) + len(aws.ToString(a.StringValue))
			}
			c.delays = append(c.delays, e.DelaySeconds)
			if e.MessageGroupId != "" {
				c.groups++
			}
		}
		mu.Lock()
		calls = append(calls, c)
		mu.Unlock()
		return nil, nil
	})
	var items []sqsmove.Item
	big := strings.Repeat("x", 60<<10)
	for i := range 47 {
		body := fmt.Sprintf(`{"n":%d}`, i)
		queue, route := f.target("P1"), sqsmove.Route{Target: f.target("P1")}
		switch {
		case i%4 == 1:
			body = fmt.Sprintf(`{"n":%d,"big":%q}`, i, big) // five of these fill 256 KiB
			queue, route = f.target("P2"), sqsmove.Route{Target: f.target("P2")}
		case i%4 == 2:
			queue, route = f.dlq, sqsmove.Route{Park: true, Delay: 900}
		case i%4 == 3 && i < 20:
			queue, route = fifo, sqsmove.Route{Target: fifo}
		}
		v := fmt.Sprint("v-", i)
		m := sqsmove.FromLambda(events.SQSMessage{MessageId: fmt.Sprint("id-", i), Body: body,
			MessageAttributes: map[string]events.SQSMessageAttribute{"origin": {DataType: "String", StringValue: &v}}})
		items = append(items, sqsmove.Item{Msg: &m, Queue: queue, Route: route})
	}
	sent := sqsmove.Send(context.Background(), f.api, items, 4)
	counts := map[sqsmove.Outcome]int{}
	for i, s := range sent {
		counts[s.Outcome]++
		if want := map[bool]sqsmove.Outcome{false: sqsmove.OutcomeSent, true: sqsmove.OutcomeParked}[items[i].Route.Park]; s.Outcome != want || s.NewID == "" {
			t.Errorf("item %d: %+v", i, s)
		}
	}
	for _, c := range calls {
		if c.entries > 10 || (c.entries > 1 && c.bytes > sqsmove.DefaultMaxBatchBytes) {
			t.Errorf("a batch of %d entries, %d bytes to %s", c.entries, c.bytes, c.queue)
		}
		for _, d := range c.delays {
			if (c.queue == f.dlq) != (d == 900) {
				t.Errorf("delay %d in a batch to %s", d, c.queue)
			}
		}
		if (c.queue == fifo) != (c.groups == c.entries) {
			t.Errorf("%d of %d entries with a group to %s", c.groups, c.entries, c.queue)
		}
	}
	// P1 gets 18 messages in 2 calls, P2 12 big ones in 3 (4+4+4: five
	// would pass 256 KiB), the FIFO queue 5 in 1, the DLQ 12 in 2.
	perQueue := map[string]int{}
	for _, c := range calls {
		perQueue[c.queue]++
	}
	if len(calls) != 8 || perQueue[f.target("P2")] != 3 {
		t.Errorf("%d calls %v", len(calls), perQueue)
	}
	for _, q := range []string{f.target("P1"), f.target("P2"), fifo} {
		for _, m := range testsupport.Drain(t, f.c, q, 2*time.Second) {
			var n int
			fmt.Sscanf(aws.ToString(m.Body), `{"n":%d`, &n)
			if got := aws.ToString(m.MessageAttributes["origin"].StringValue); got != fmt.Sprint("v-", n) {
				t.Errorf("%s: origin %q", aws.ToString(m.Body)[:12], got)
			}
			counts["arrived"]++
		}
	}
	if counts[sqsmove.OutcomeSent] != 35 || counts[sqsmove.OutcomeParked] != 12 || counts["arrived"] != 35 {
		t.Errorf("%v", counts)
	}
}
