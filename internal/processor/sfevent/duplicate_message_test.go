package sfevent

import (
	"bytes"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/testsupport"
)

// TestTwoCopiesOfOneMessageInOneEvent: SQS's at-least-once delivery can
// hand the same message twice in one batch. A write that fails must send
// one dead letter (real SQS), not two: the archiver would otherwise keep
// two objects of one message, and a recovery write it twice. The written
// message is written; every record of the event gets its log line; the
// same id from another queue is another message.
func TestTwoCopiesOfOneMessageInOneEvent(t *testing.T) {
	w := newDLQWriter(t, nil)
	w.h.Concurrency = 4
	bad, good := sqsRecord("m-bad", eventBody("dupbad", "NOPE", "1")), sqsRecord("m-good", eventBody("dupgood", "MOD09GQ", "006"))
	other := []byte(strings.Replace(string(bad), `:in"`, `:other"`, 1))
	if bytes.Equal(other, bad) {
		t.Fatal("the record's queue was not changed")
	}
	if ids := failedIDs(t, w.h, sqsEvent(bad, good, bad, good, other)); len(ids) != 0 {
		t.Fatalf("batch item failures %v", ids)
	}
	if !testsupport.ExecutionWritten(t, w.dbURL, "dupgood") {
		t.Fatal("the good message was not written")
	}
	var queues []string
	for _, m := range testsupport.Drain(t, w.c, w.dlq, time.Second) {
		b := aws.ToString(m.Body)
		if gjson.Get(b, "messageId").Str != "m-bad" || !strings.HasPrefix(gjson.Get(b, "error").Str, "UnmetRequirementsError") {
			t.Errorf("dead letter %.200s", b)
		}
		queues = append(queues, gjson.Get(b, "eventSourceARN").Str)
	}
	slices.Sort(queues)
	if want := []string{"arn:aws:sqs:us-east-1:123456789012:in", "arn:aws:sqs:us-east-1:123456789012:other"}; !reflect.DeepEqual(queues, want) {
		t.Errorf("dead letters from queues %v, want one per queue %v", queues, want)
	}
	if n := strings.Count(w.logs.String(), `"type":"record"`); n != 5 {
		t.Errorf("%d record log lines for 5 records:\n%s", n, w.logs.String())
	}
	if !strings.Contains(w.logs.String(), `"records":5,"written":2,"dead_lettered":3`) {
		t.Errorf("summary: %s", w.logs.String())
	}
}
