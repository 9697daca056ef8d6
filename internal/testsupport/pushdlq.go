package testsupport

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/deadletter/deadletter/internal/pushpolicy"
	"github.com/deadletter/deadletter/internal/pushpolicy/gen"
)

// PushDLQ is a push DLQ on the test SQS server seeded with the parity
// corpus (gen.Parity), and its priority queues ${Base}P0 … ${Base}P3.
type PushDLQ struct {
	DLQ   string
	Base  string
	Cases []gen.Case
	IDs   []string            // SQS message ids, in the order of Cases
	ByID  map[string]gen.Case // the case of each message id
}

// NewPushDLQ creates the queues (deleted after the test) and seeds the DLQ
// with at least n messages of the parity corpus, each with the message
// attributes PushAttributes gives it.
func NewPushDLQ(t testing.TB, c *sqs.Client, n int) *PushDLQ {
	t.Helper()
	p := &PushDLQ{ByID: map[string]gen.Case{}}
	p.DLQ, p.Base = NewPushQueues(t, c, "pp", gen.ParityPriorities...)
	p.Cases = gen.Parity(n, 11)
	bodies := make([]string, len(p.Cases))
	for i, cs := range p.Cases {
		bodies[i] = cs.Body
	}
	p.IDs = SendBodies(t, c, p.DLQ, bodies, PushAttributes)
	for i, id := range p.IDs {
		p.ByID[id] = p.Cases[i]
	}
	return p
}

// NewPushQueues creates a push DLQ (PREFIX-RANDOM-push-dlq) and the
// priority queues ${base}P<priority> for each priority, deleted after the
// test, and returns the DLQ's URL and the base URL.
func NewPushQueues(t testing.TB, c *sqs.Client, prefix string, priorities ...int) (dlq, base string) {
	t.Helper()
	prefix += RandomHex(3) + "-"
	dlq = CreateQueue(t, c, prefix+"push-dlq", nil)
	for _, p := range priorities {
		CreateQueue(t, c, fmt.Sprintf("%sP%d", prefix, p), nil)
	}
	return dlq, strings.TrimSuffix(dlq, "push-dlq")
}

// Target is the priority queue of a priority.
func (p *PushDLQ) Target(priority int) string { return pushpolicy.TargetURL(p.Base, priority) }

// Env is the push-dlq processor's environment for the corpus's window and
// codes (codes "*" when all).
func (p *PushDLQ) Env(all bool) map[string]string {
	codes := gen.ParityCodes
	if all {
		codes = "*"
	}
	return map[string]string{
		pushpolicy.EnvDLQURL: p.DLQ, pushpolicy.EnvBaseURL: p.Base,
		pushpolicy.EnvStartAt: gen.ParityStart.Format(time.RFC3339), pushpolicy.EnvEndAt: gen.ParityEnd.Format(time.RFC3339),
		pushpolicy.EnvErrorCodes: codes,
	}
}

// PushAttributes are the message attributes seeded message i carries: a
// string, a number and a binary one, so that a test sees each kept.
func PushAttributes(i int) map[string]types.MessageAttributeValue {
	return map[string]types.MessageAttributeValue{
		"origin":  {DataType: aws.String("String"), StringValue: aws.String(fmt.Sprint("push-", i))},
		"attempt": {DataType: aws.String("Number"), StringValue: aws.String(fmt.Sprint(i % 7))},
		"blob":    {DataType: aws.String("Binary"), BinaryValue: []byte{0, byte(i), 0xff}},
	}
}

// CheckPushAttributes reports what is wrong with the attributes of a
// message that left the DLQ as message i ("" when they were kept).
func CheckPushAttributes(i int, got map[string]types.MessageAttributeValue) string {
	want := PushAttributes(i)
	if len(got) != len(want) {
		return fmt.Sprintf("attributes %v, want %v", got, want)
	}
	for k, w := range want {
		g, ok := got[k]
		if !ok || aws.ToString(g.DataType) != aws.ToString(w.DataType) || aws.ToString(g.StringValue) != aws.ToString(w.StringValue) ||
			string(g.BinaryValue) != string(w.BinaryValue) {
			return fmt.Sprintf("attribute %s is %+v, want %+v", k, g, w)
		}
	}
	return ""
}

// Receive receives n messages of a queue (every attribute, every system
// attribute) and keeps them invisible for visibility seconds; it fails the
// test when fewer arrive within a minute.
func Receive(t testing.TB, c *sqs.Client, queueURL string, n int, visibility int32) []types.Message {
	t.Helper()
	var all []types.Message
	seen := map[string]bool{}
	deadline := time.Now().Add(time.Minute)
	for len(all) < n {
		if time.Now().After(deadline) {
			t.Fatalf("receive from %s: %d of %d messages", queueURL, len(all), n)
		}
		out, err := c.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(queueURL), MaxNumberOfMessages: int32(min(10, n-len(all))), WaitTimeSeconds: 1, VisibilityTimeout: visibility,
			MessageAttributeNames:       []string{"All"},
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		})
		if err != nil {
			t.Fatalf("receive from %s: %v", queueURL, err)
		}
		for _, m := range out.Messages {
			if id := aws.ToString(m.MessageId); !seen[id] {
				seen[id] = true
				all = append(all, m)
			}
		}
	}
	return all
}
