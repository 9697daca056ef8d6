package dlawriter_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/processor/dlawriter"
)

// TestAnExecutionNameTooLongForAKeyIsArchivedAsUnknown: an execution ARN
// whose name would make the key longer than S3 takes (1024 bytes) fails
// every put, and the record would be retried until the DLQ's retention
// drops it. It is archived (real S3) under unknown-<uuid>, its full ARN
// kept in the object.
func TestAnExecutionNameTooLongForAKeyIsArchivedAsUnknown(t *testing.T) {
	e := newEnv(t)
	arn := "arn:aws:states:us-east-1:123456789012:execution:sm:" + strings.Repeat("n", 1100)
	body, _ := json.Marshal(map[string]any{"time": "2024-05-06T00:00:00Z", "detail": map[string]any{"executionArn": arn, "status": "ABORTED"}})
	rec, _ := json.Marshal(map[string]any{"messageId": "m-long", "eventSourceARN": "q", "body": string(body)})
	resp, err := e.processor(nil).Handle(context.Background(), dlawriter.Event{Records: []json.RawMessage{rec}})
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("%+v %v\n%s", resp, err, e.log)
	}
	keys := e.keys(t)
	want := "demo/dead-letter-archive/sqs/2024-05-06/unknown-" + dla.MessageUUID("q", "m-long")
	if len(keys) != 1 || keys[0] != want {
		t.Fatalf("keys %v, want [%s]", keys, want)
	}
	if !strings.Contains(string(e.get(t, keys[0])), arn) {
		t.Error("the object lost the execution's ARN")
	}
}
