package sfevent

import (
	"context"
	"strings"
	"testing"

	"github.com/deadletter/deadletter/internal/testsupport"
)

// TestAnInvocationWithoutRecordsFails: a payload with no Records list is
// not an SQS event (a Step Functions event sent straight to the function,
// a wrong trigger). Answering it with an empty success would drop it
// unwritten; the invocation fails instead, so that Lambda retries it or
// hands it to the function's failure destination. An SQS event with no
// records is a success.
func TestAnInvocationWithoutRecordsFails(t *testing.T) {
	rec := &sqsRecorder{}
	h, dbURL := seed3Handler(t, rec)
	for _, ev := range []string{`{}`, `null`, `{"Records":null}`, eventBody("direct", "MOD09GQ", "006")} {
		resp, err := h.Handle(context.Background(), []byte(ev))
		if err == nil || !strings.Contains(err.Error(), "not an SQS event") {
			t.Errorf("%.60s: response %+v, error %v; want the invocation to fail", ev, resp, err)
		}
	}
	if testsupport.ExecutionWritten(t, dbURL, "direct") || len(rec.bodies) != 0 {
		t.Errorf("the event sent straight to the function was written or dead-lettered")
	}
	if resp, err := h.Handle(context.Background(), []byte(`{"Records":[]}`)); err != nil || len(resp.BatchItemFailures) != 0 {
		t.Errorf("an empty SQS event: %+v %v", resp, err)
	}
}
