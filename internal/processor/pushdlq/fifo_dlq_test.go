package pushdlq_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/deadletter/deadletter/internal/processor/pushdlq"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// A FIFO queue as PUSH_DLQ_QUEUE_URL fails the cold start, naming the
// variable and the value. Before, the function started: every park (a
// malformed body, a code not selected) then sent DelaySeconds 900 to a
// FIFO queue, which refuses it (fauxqs: InvalidParameterValue), so every
// ineligible record came back as a batch item failure, forever: the poison
// pill the processor promises a malformed body never becomes. pushdlq
// replay refuses a FIFO DLQ too (TestFIFODLQIsRefused).
func TestFIFODLQFailsTheColdStart(t *testing.T) {
	endpoint := testsupport.SQSEndpoint(t)
	c := testsupport.SQSClientAt(endpoint)
	_, base := testsupport.NewPushQueues(t, c, "pf", 1)
	fifo := testsupport.CreateQueue(t, c, "pf"+testsupport.RandomHex(3)+"-dlq.fifo", map[string]string{"FifoQueue": "true"})
	awsEnv(t, endpoint)
	env := processorEnv(fifo, base, "1004")
	_, err := pushdlq.New(context.Background(), func(k string) string { return env[k] }, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), `PUSH_DLQ_QUEUE_URL="`+fifo+`"`) || !strings.Contains(err.Error(), "FIFO") {
		t.Fatalf("cold start with a FIFO DLQ: error %v, want one naming PUSH_DLQ_QUEUE_URL and its value", err)
	}
}
