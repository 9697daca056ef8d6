package sfevent

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/jackc/pgx/v5"

	"github.com/deadletter/deadletter/internal/testsupport"
)

// TestConcurrentInstancesWritingTheSameExecutions: two function instances
// (two handlers, two pools, several records at once each) get the RUNNING
// and the SUCCEEDED events of the same executions at the same moment, as
// when SQS hands both to different instances. Every record is written
// (none retried, none dead-lettered over a conflict), and every execution
// ends completed whatever order the writes took: the late "running" never
// wins.
func TestConcurrentInstancesWritingTheSameExecutions(t *testing.T) {
	dbURL := testsupport.NewCumulusDatabase(t, testsupport.Seed3Seed(t))
	a, b := &lockedRecorder{}, &lockedRecorder{}
	ha := testHandler(t, dbURL, testsupport.NewSFNFake(t, nil), a)
	hb := testHandler(t, dbURL, testsupport.NewSFNFake(t, nil), b)
	ha.Concurrency, hb.Concurrency = 4, 4
	run := testsupport.RandomHex(3)
	// The RUNNING event alone writes a running execution: the race below
	// is between two writes that each change the row.
	alone := "race" + run + "-alone"
	if ids := failedIDs(t, ha, sqsEvent(sqsRecord("alone", strings.Replace(eventBody(alone, "MOD09GQ", "006"), `"status":"SUCCEEDED"`, `"status":"RUNNING"`, 1)))); len(ids) != 0 {
		t.Fatal(ids)
	}
	const n = 40
	var running, succeeded []string
	for i := range n {
		name := fmt.Sprintf("race%s-%02d", run, i)
		ev := eventBody(name, "MOD09GQ", "006")
		succeeded = append(succeeded, string(sqsRecord("s-"+name, ev)))
		running = append(running, string(sqsRecord("r-"+name, strings.Replace(ev, `"status":"SUCCEEDED"`, `"status":"RUNNING"`, 1))))
	}
	var wg sync.WaitGroup
	var failedA, failedB []string
	for i := 0; i < n; i += 10 {
		wg.Add(2)
		evA, evB := rawEvent(running[i:i+10]), rawEvent(succeeded[i:i+10])
		if i%20 == 10 { // the other way round
			evA, evB = evB, evA
		}
		go func() { defer wg.Done(); failedA = append(failedA, handle(ha, evA)...) }()
		go func() { defer wg.Done(); failedB = append(failedB, handle(hb, evB)...) }()
		wg.Wait()
	}
	if len(failedA)+len(failedB) != 0 || len(a.bodies)+len(b.bodies) != 0 {
		t.Fatalf("retried %v %v; dead-lettered %d: a conflict between instances is not the message's fault\n%v", failedA, failedB,
			len(a.bodies)+len(b.bodies), append(a.bodies, b.bodies...))
	}
	conn, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(context.Background(), `SELECT arn, status FROM executions WHERE arn LIKE '%:race' || $1 || '-%'`, run)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for rows.Next() {
		var arn, status string
		if err := rows.Scan(&arn, &status); err != nil {
			t.Fatal(err)
		}
		got[arn[strings.LastIndex(arn, ":")+1:]] = status
	}
	if got[alone] != "running" {
		t.Fatalf("the RUNNING event alone left %q, want running", got[alone])
	}
	delete(got, alone)
	if len(got) != n {
		t.Fatalf("%d executions, want %d", len(got), n)
	}
	for arn, s := range got {
		if s != "completed" {
			t.Errorf("%s: %s, want completed", arn, s)
		}
	}
}

type lockedRecorder struct {
	mu sync.Mutex
	sqsRecorder
}

func (l *lockedRecorder) SendMessage(ctx context.Context, in *sqs.SendMessageInput, o ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sqsRecorder.SendMessage(ctx, in, o...)
}

// handle is failedIDs for a goroutine: an error is a failure of every record.
func handle(h *Handler, event []byte) []string {
	resp, err := h.Handle(context.Background(), event)
	if err != nil {
		return []string{err.Error()}
	}
	var ids []string
	for _, f := range resp.BatchItemFailures {
		ids = append(ids, f.ItemIdentifier)
	}
	return ids
}

func rawEvent(records []string) []byte {
	return []byte(`{"Records":[` + strings.Join(records, ",") + `]}`)
}
