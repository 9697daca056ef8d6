package main_test

import (
	"context"
	"strings"
	"testing"

	"github.com/deadletter/deadletter/internal/sqsmove"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// The reply of one ReceiveMessage is lost (the network cut it
// after SQS had handed out ten messages and made them invisible). The SDK
// retries the receive, the scan goes on without those ten, and the replay
// reports success (exit 0) although up to ten messages, some eligible,
// are still in the DLQ, invisible for the visibility timeout. Issue 10
// item 9: a run must never report done while messages are in flight
// without saying so.
func TestLostReceiveReplyIsNotReportedAsDone(t *testing.T) {
	t.Parallel()
	w := seededWorld(t, 80)
	drop := testsupport.NewDropReplyProxy(t, w.endpoint, func(op string, nth int, _ []byte) bool {
		return op == "ReceiveMessage" && nth == 2
	})
	stdout, stderr, code := w.run([]string{"AWS_ENDPOINT_URL=" + drop.URL}, "", w.replayArgs("--yes", "-o", "json", "--visibility-timeout", "60s")...)
	if drop.Dropped("ReceiveMessage") != 1 {
		t.Fatalf("no receive reply was dropped: %s", stderr)
	}
	q, err := sqsmove.Describe(context.Background(), w.c, w.dlq)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("exit %d; DLQ after the run: %d visible, %d in flight\n%s\n%s", code, q.Visible, q.InFlight, stdout, stderr)
	if q.InFlight > 0 && code == 0 && !strings.Contains(stderr, "in flight") {
		t.Errorf("the replay exited 0 and said nothing, while %d messages of the DLQ are still invisible (never scanned)", q.InFlight)
	}
}
