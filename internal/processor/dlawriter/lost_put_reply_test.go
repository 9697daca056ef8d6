package dlawriter_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/testsupport"
	"github.com/deadletter/deadletter/internal/testsupport/lambdart"
)

// TestArchiverBootstrapOverwritesWhenAPutsReplyIsLost runs the real
// bootstrap on a queue of records with and without an event time, and S3
// (versitygw behind the proxy) takes the first puts but loses their
// replies: each put took effect, the function cannot know it, and the SDK's
// own retries lose theirs too, so the records come back as batch item
// failures and are delivered again. Every message must end as exactly one
// object: the retry overwrites, it does not add one.
func TestArchiverBootstrapOverwritesWhenAPutsReplyIsLost(t *testing.T) {
	a := startArchiver(t, nil, true)
	rt, proxy := a.rt, a.proxy
	c := testsupport.SQSClient(t)
	queue := testsupport.NewQueue(t, c, "archiver-lost-", false)
	var bodies []string
	for i := range 20 {
		switch i % 4 {
		case 0: // an event with a time, no Cumulus message in it
			bodies = append(bodies, fmt.Sprintf(`{"time":"2024-05-06T00:00:%02dZ","detail":{"executionArn":"arn:aws:states:us-east-1:1:execution:sm:lost-%d","status":"ABORTED"}}`, i, i))
		case 1: // not an event: no time
			bodies = append(bodies, fmt.Sprintf(`{"cumulus_meta":{"execution_name":"n%d"}}`, i))
		case 2: // not JSON: archived raw, no time
			bodies = append(bodies, fmt.Sprintf(`{broken %d`, i))
		default: // a detail that is not an object
			bodies = append(bodies, fmt.Sprintf(`{"time":"2024-05-07T00:00:00Z","detail":"d%d"}`, i))
		}
	}
	sent := testsupport.SendBodies(t, c, queue, bodies, nil)

	lostReplies := proxy.LoseFirstReplies("PutObject", 40)
	esm := &lambdart.ESM{Client: c, QueueURL: queue, VisibilityTimeout: 1, ReportBatchItemFailures: true}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	st, err := esm.Drain(ctx, rt, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	lost := lostReplies()
	if lost < 40 || st.Failed == 0 {
		t.Fatalf("%d replies lost, %d records failed: the fault did not happen", lost, st.Failed)
	}
	if !testsupport.QueueEmpty(t, c, queue) {
		t.Fatal("messages are left on the queue")
	}
	objects := map[string][]string{}
	store := archive.NewS3(a.s3c, a.bucket)
	err = store.List(context.Background(), "demo/dead-letter-archive/sqs/", false, func(e archive.Entry) error {
		b, err := store.Get(context.Background(), e.Key)
		if err != nil {
			return err
		}
		id := gjson.GetBytes(b, "messageId").String()
		if id == "" { // archived raw as a string
			id = gjson.Get(gjson.GetBytes(b, "record").String(), "messageId").String()
		}
		objects[id] = append(objects[id], e.Key)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range sent {
		if len(objects[id]) != 1 {
			t.Errorf("%s: %d objects %v, want 1", id, len(objects[id]), objects[id])
		}
	}
	if len(objects) != len(sent) {
		t.Errorf("%d message ids in the archive, %d sent: %s", len(objects), len(sent), strings.Join(keysOf(objects), " "))
	}
	t.Logf("%d replies lost, %d records failed and delivered again, %d invocations", lost, st.Failed, st.Invocations)
}

func keysOf(m map[string][]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
