package main_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/deadletter/deadletter/internal/sqsmove"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// A FIFO DLQ is refused by every command that reads it, before anything
// is received (the scan would stop at the first message of each group):
// exit 2, saying why.
func TestFIFODLQIsRefused(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 1)
	fifo := testsupport.CreateQueue(t, w.c, "e2e"+testsupport.RandomHex(3)+"-push-dlq.fifo", map[string]string{"FifoQueue": "true"})
	for _, args := range [][]string{
		{"replay", "--dlq", fifo, "--queue-base-url", w.base, "--window", winStart + "/" + winEnd, "--codes", "1004", "--yes"},
		{"inspect", "--dlq", fifo},
		{"export", "--dlq", fifo, "--out", "-"},
	} {
		_, stderr, code := w.run(nil, "", args...)
		if code != 2 || !strings.Contains(stderr, "is a FIFO queue; the push DLQ is a standard queue") || strings.Contains(stderr, "Scanned") {
			t.Errorf("%s: exit %d, want 2 refusing the FIFO queue: %s", args[0], code, stderr)
		}
	}
}

// A DLQ with its own redrive policy: each receive counts toward its
// maxReceiveCount, so reading it can move messages out of it. inspect,
// export and replay refuse it (exit 2, saying what would happen) and
// receive nothing; with --allow-redrive they read it, with a warning.
func TestDLQWithItsOwnRedrivePolicyNeedsAllowRedrive(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 1, 2)
	w.seed(16)
	other := testsupport.CreateQueue(t, w.c, "e2e"+testsupport.RandomHex(3)+"-dlq-dlq", nil)
	q, err := sqsmove.Describe(context.Background(), w.c, other)
	if err != nil {
		t.Fatal(err)
	}
	policy := fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"2"}`, q.ARN)
	if _, err := w.c.SetQueueAttributes(context.Background(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(w.dlq), Attributes: map[string]string{"RedrivePolicy": policy}}); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		w.replayArgs("--yes"),
		{"inspect", "--dlq", w.dlq},
		{"export", "--dlq", w.dlq, "--out", "-"},
	} {
		_, stderr, code := w.run(nil, "", args...)
		if code != 2 || !strings.Contains(stderr, "has its own redrive policy (maxReceiveCount 2, to "+q.ARN+"): every receive by pushdlq counts toward it") || !strings.Contains(stderr, "--allow-redrive") {
			t.Errorf("%s: exit %d, want 2 explaining the redrive policy: %s", args[0], code, stderr)
		}
	}
	d, err := sqsmove.Describe(context.Background(), w.c, w.dlq)
	if err != nil || d.Visible != 16 || d.InFlight != 0 {
		t.Fatalf("the refused commands touched the DLQ: %+v %v", d, err)
	}
	out, stderr, code := w.run(nil, "", "inspect", "--dlq", w.dlq, "--allow-redrive")
	if code != 0 || !strings.Contains(stderr, "warning: ") || !strings.Contains(out, "16") {
		t.Errorf("inspect --allow-redrive: exit %d:\n%s\n%s", code, out, stderr)
	}
}
