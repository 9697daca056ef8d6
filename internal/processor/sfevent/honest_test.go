package sfevent

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/testsupport"
)

// A DeadLetterQueue send whose reply is lost may have delivered: the
// record is retried (never dropped) and its log line and the summary say
// it may be dead-lettered twice, rather than calling the send failed.
func TestWriterDeadLetterSendWithoutReplyIsAPossibleDuplicate(t *testing.T) {
	proxy := testsupport.NewProxy(t, testsupport.SQSEndpoint(t))
	w := newDLQWriter(t, testsupport.SQSClientAt(proxy.URL))
	proxy.SetLoseReply(func(op string) bool { return op == "SendMessage" })
	ids := failedIDs(t, w.h, sqsEvent(sqsRecord("m-good", eventBody("hgood", "MOD09GQ", "006")), sqsRecord("m-bad", eventBody("hbad", "NOPE", "1"))))
	if !reflect.DeepEqual(ids, []string{"m-bad"}) {
		t.Fatalf("batch item failures %v, want [m-bad]", ids)
	}
	var record, summary map[string]any
	for _, line := range strings.Split(strings.TrimSpace(w.logs.String()), "\n") {
		var l map[string]any
		_ = json.Unmarshal([]byte(line), &l)
		switch {
		case l["type"] == "record" && l["message_id"] == "m-bad":
			record = l
		case l["type"] == "summary":
			summary = l
		}
	}
	if record["possible_duplicate"] != true || record["outcome"] != OutcomeRetry {
		t.Errorf("record log %v: want a retry marked possible_duplicate", record)
	}
	if got, _ := json.Marshal(summary["possible_duplicate_ids"]); string(got) != `["m-bad"]` {
		t.Errorf("summary possible_duplicate_ids %s, want [\"m-bad\"]", got)
	}
	if len(testsupport.Drain(t, w.c, w.dlq, 500*time.Millisecond)) == 0 {
		t.Error("the lost-reply send did not reach the DeadLetterQueue: the proxy did not forward it")
	}
}

// With one reply lost, the SDK must not retry the send on its own: a retry
// that succeeds would leave two dead letters while the record reads as
// dead-lettered once. The send is made once; the record is retried by SQS
// and marked a possible duplicate.
func TestWriterDeadLetterSendIsNotRetriedBehindItsBack(t *testing.T) {
	proxy := testsupport.NewProxy(t, testsupport.SQSEndpoint(t))
	w := newDLQWriter(t, testsupport.SQSClientAt(proxy.URL))
	proxy.LoseFirstReplies("SendMessage", 1)
	ids := failedIDs(t, w.h, sqsEvent(sqsRecord("m-bad", eventBody("hbad2", "NOPE", "1"))))
	if !reflect.DeepEqual(ids, []string{"m-bad"}) || !strings.Contains(w.logs.String(), `"possible_duplicate":true`) {
		t.Fatalf("batch item failures %v, log %s: want m-bad retried as a possible duplicate", ids, w.logs.String())
	}
	if n := len(testsupport.Drain(t, w.c, w.dlq, 500*time.Millisecond)); n != 1 {
		t.Fatalf("%d dead letters after one send whose reply was lost, want 1", n)
	}
}
