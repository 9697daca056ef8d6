package sfevent

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/testsupport"
)

// TestHostileBodiesAreWrittenOrDeadLetteredNeverLost: bodies that nest 10
// million levels, hold a NUL or bytes that are not UTF-8, or are not a
// string at all (an object, a number). (A record nested deeper than
// encoding/json's 10000 levels outside its body string cannot come from
// SQS, whose bodies are strings; aws-lambda-go refuses such a payload.) No
// record is lost or retried for ever: the object body, a Step Functions
// event as it is, is written; each other record is dead-lettered once,
// with its reason; nothing panics.
func TestHostileBodiesAreWrittenOrDeadLetteredNeverLost(t *testing.T) {
	rec := &sqsRecorder{}
	h, dbURL := seed3Handler(t, rec)
	withBody := func(id string, body any) json.RawMessage {
		b, _ := json.Marshal(map[string]any{"messageId": id, "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:in", "body": body})
		return b
	}
	deep := strings.Repeat("[", 10_000_000) + strings.Repeat("]", 10_000_000)
	records := []json.RawMessage{
		withBody("deep", deep),
		withBody("nul", "{\"detail\":{\"status\":\"RUNNING\",\"input\":\"\x00\"}}"),
		json.RawMessage("{\"messageId\":\"not-utf8\",\"body\":\"{\\\"a\\\":\\\"\xff\xfe\\\"}\"}"),
		withBody("object-body", json.RawMessage(eventBody("objbody", "MOD09GQ", "006"))),
		withBody("number-body", 5),
	}
	ids := failedIDs(t, h, sqsEvent(records...))
	if len(ids) != 0 {
		t.Fatalf("batch item failures %v: a body no retry can fix is retried", ids)
	}
	if !testsupport.ExecutionWritten(t, dbURL, "objbody") {
		t.Error("the event given as an object body was not written")
	}
	lettered := map[string]string{}
	for _, b := range rec.bodies {
		lettered[gjson.Get(b, "messageId").Str] = gjson.Get(b, "error").Str
	}
	for _, id := range []string{"deep", "nul", "not-utf8", "number-body"} {
		if lettered[id] == "" {
			t.Errorf("%s: not dead-lettered with a reason", id)
		}
	}
	if len(rec.bodies) != 4 {
		t.Errorf("%d dead letters, want 4", len(rec.bodies))
	}
}
