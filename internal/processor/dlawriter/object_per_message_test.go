package dlawriter_test

import (
	"context"
	"encoding/json"
	"sort"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/processor/dlawriter"
)

// TestArchiverKeysOneObjectPerQueueMessage: in real S3, one event holding
//   - the same SQS message twice (at-least-once delivery can put both
//     copies in one batch): one object;
//   - the same message id from two queues (the event source mapping of
//     another queue, a redrive): two objects;
//   - a record without eventSourceARN, and one without messageId: an
//     object each;
//   - bodies that are not strings (an object, a number), and none at all:
//     archived, not failed.
//
// Nothing is a batch item failure; every record's line names its key.
func TestArchiverKeysOneObjectPerQueueMessage(t *testing.T) {
	e := newEnv(t)
	ev := `{"time":"2024-05-06T00:00:00Z","detail":{"executionArn":"arn:aws:states:us-east-1:1:execution:sm:ident","status":"ABORTED"}}`
	rec := func(fields map[string]any) json.RawMessage {
		b, _ := json.Marshal(fields)
		return b
	}
	q1, q2 := "arn:aws:sqs:us-east-1:123456789012:q1", "arn:aws:sqs:us-east-1:123456789012:q2"
	records := []json.RawMessage{
		rec(map[string]any{"messageId": "m1", "eventSourceARN": q1, "body": ev, "receiptHandle": "a"}),
		rec(map[string]any{"messageId": "m1", "eventSourceARN": q1, "body": ev, "receiptHandle": "b"}),
		rec(map[string]any{"messageId": "m1", "eventSourceARN": q2, "body": ev}),
		rec(map[string]any{"messageId": "m2", "body": ev}),
		rec(map[string]any{"eventSourceARN": q1, "body": ev}),
		rec(map[string]any{"messageId": "m3", "eventSourceARN": q1, "body": json.RawMessage(ev)}),
		rec(map[string]any{"messageId": "m4", "eventSourceARN": q1, "body": 5}),
		rec(map[string]any{"messageId": "m5", "eventSourceARN": q1}),
	}
	resp, err := e.processor(nil).Handle(context.Background(), dlawriter.Event{Records: records})
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("%+v %v", resp, err)
	}
	keys := e.keys(t)
	sort.Strings(keys)
	if len(keys) != 7 {
		t.Fatalf("%d objects, want 7 (the duplicate delivery shares one): %v", len(keys), keys)
	}
	want := map[string]bool{}
	for _, k := range []struct{ q, id string }{{q1, "m1"}, {q2, "m1"}, {"", "m2"}} {
		want["demo/dead-letter-archive/sqs/2024-05-06/ident-"+dla.MessageUUID(k.q, k.id)] = true
	}
	for k := range want {
		if sort.SearchStrings(keys, k) == len(keys) || keys[sort.SearchStrings(keys, k)] != k {
			t.Errorf("no object %s", k)
		}
	}
	for _, l := range logLines(t, e.log) {
		if l.Type == "record" && (l.Key == "" || l.Outcome == string(dlawriter.Failed)) {
			t.Errorf("log line %+v", l)
		}
	}
	for _, k := range keys {
		b := e.get(t, k)
		if !gjson.ValidBytes(b) {
			t.Errorf("%s is not JSON: %.200s", k, b)
		}
	}
}
