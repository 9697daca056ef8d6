package main_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/sqsmove"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// Another consumer holds 10 messages while the rest are visible: the
// replay moves the visible ones, reports the 10 as in flight elsewhere and
// exits 3 (`help exit-codes`: 0 means everything selected was moved).
func TestInFlightElsewhereWithVisibleWorkExits3(t *testing.T) {
	t.Parallel()
	w := seededWorld(t, 40)
	testsupport.Receive(t, w.c, w.dlq, 10, 120) // another consumer
	stdout, stderr, code := w.run(nil, "", w.replayArgs("--yes", "-o", "json")...)
	if code != 3 || gjson.Get(stdout, "in_flight_elsewhere").Int() != 10 || gjson.Get(stdout, "sent").Int() == 0 || !strings.Contains(stderr, "in flight 10") {
		t.Errorf("exit %d, want 3 with in_flight_elsewhere 10 named in the plan:\n%s\n%s", code, stdout, stderr)
	}
}

// Eligible messages delayed in the DLQ cannot be read: the replay names
// them and exits 3, never "nothing to replay" with exit 0.
func TestDelayedMessagesAreMentioned(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 1, 2)
	for i := range 5 {
		body := fmt.Sprintf(`{"priority":1,"createdAt":%d,"errorCode":1004,"errorMessage":"x","n":%d}`, inWindow, i)
		if _, err := w.c.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(w.dlq), MessageBody: aws.String(body), DelaySeconds: 120}); err != nil {
			t.Fatal(err)
		}
	}
	stdout, stderr, code := w.run(nil, "", w.replayArgs("--yes", "-o", "json")...)
	if code != 3 || gjson.Get(stdout, "delayed").Int() != 5 || !strings.Contains(stderr, "5 messages are delayed") || strings.Contains(stderr, "\nnothing to replay") {
		t.Errorf("exit %d, want 3 naming 5 delayed messages:\n%s\n%s", code, stdout, stderr)
	}
}

// A resume whose interrupted run's messages are now held by another
// consumer counts each of them once: as still held, not also as in flight
// elsewhere.
func TestResumeCountsMessagesHeldElsewhereOnce(t *testing.T) {
	t.Parallel()
	w := seededWorld(t, 20)
	journal := writeJournal(t, killedHolding("", w.ids)...)
	testsupport.Receive(t, w.c, w.dlq, 20, 120) // another consumer
	q, err := sqsmove.Describe(context.Background(), w.c, w.dlq)
	if err != nil || q.InFlight != 20 {
		t.Fatalf("another consumer holds %d of 20: %v", q.InFlight, err)
	}
	stdout, stderr, code := w.run(nil, "", w.replayArgs("--yes", "--resume", journal, "-o", "json")...)
	held, elsewhere := gjson.Get(stdout, "still_held").Int(), gjson.Get(stdout, "in_flight_elsewhere").Int()
	if code != 3 || held+elsewhere != 20 || !strings.Contains(stderr, "20 messages are in flight") {
		t.Errorf("exit %d, still_held %d + in_flight_elsewhere %d, want 3 and 20 in all:\n%s", code, held, elsewhere, stderr)
	}
}
