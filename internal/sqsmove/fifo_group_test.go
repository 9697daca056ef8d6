package sqsmove_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/sqsmove"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// A FIFO DLQ scanned with only the MessageGroupId system attribute (what
// the replay now asks for), replayed to FIFO targets with the pipelined
// deletes (concurrency 1 keeps one call in flight; 2 pipelines): each
// target gets its messages once, each with its own original group, and
// the DLQ keeps only the unrouted ones. (A FIFO DLQ whose group holds
// several messages gives the scan only its first while it is held: the
// CLI refuses FIFO DLQs for that, TestFIFODLQIsRefused; each message has
// a group of its own here.)
func TestFIFOGroupOnlyAttributeKeepsGroupAndOrder(t *testing.T) {
	t.Parallel()
	for _, conc := range []int{1, 2} {
		f := newFixture(t, 0, true)
		for i := range 45 {
			to := []string{"P1", "P2", "none"}[i%3]
			b := fmt.Sprintf(`{"n":%d,"to":%q,"extra":{"keep":"me"}}`, i, to)
			f.bodies = append(f.bodies, b)
			if _, err := f.c.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(f.dlq), MessageBody: aws.String(b),
				MessageGroupId: aws.String(fmt.Sprint("grp-", i)), MessageDeduplicationId: aws.String(fmt.Sprint("d", i)),
				MessageAttributes: attributes(i)}); err != nil {
				t.Fatal(err)
			}
		}
		hold := f.newHold(f.api, 60*time.Second)
		var attrs []map[string]string
		if err := hold.Receive(context.Background(), sqsmove.ReceiveOptions{Wait: time.Second, SystemAttributes: sqsmove.MoveAttributes}, func(_ int, m *sqsmove.Message) bool {
			attrs = append(attrs, m.Attributes)
			return false
		}); err != nil {
			t.Fatal(err)
		}
		for _, a := range attrs {
			if len(a) != 1 || !strings.HasPrefix(a["MessageGroupId"], "grp-") {
				t.Fatalf("received system attributes %v, want only MessageGroupId", a)
			}
		}
		counts, err := f.replay(context.Background(), hold, func(r *sqsmove.Replayer) { r.Concurrency = conc })
		if err != nil {
			t.Fatal(err)
		}
		f.release(hold)
		if counts.Sent != 30 {
			t.Errorf("concurrency %d: sent %d, want 30", conc, counts.Sent)
		}
		got := 0
		for _, q := range []string{"P1", "P2"} {
			for _, m := range testsupport.Drain(t, f.c, f.target(q), time.Second) {
				got++
				n := gjson.Get(aws.ToString(m.Body), "n").Int()
				if g := m.Attributes["MessageGroupId"]; g != fmt.Sprint("grp-", n) {
					t.Errorf("%s: message %d has group %q, want its own grp-%d", q, n, g, n)
				}
			}
		}
		if got != 30 {
			t.Errorf("concurrency %d: %d messages in the targets, want 30", conc, got)
		}
		if left := len(testsupport.Drain(t, f.c, f.dlq, time.Second)); left != 15 {
			t.Errorf("concurrency %d: %d messages left in the DLQ, want the 15 unrouted", conc, left)
		}
	}
}
