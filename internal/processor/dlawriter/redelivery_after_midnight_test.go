package dlawriter_test

import (
	"encoding/json"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/dla"
)

// TestARecordWithoutTimeRedeliveredAfterMidnightOverwrites: a record whose
// event has no time is delivered just before midnight UTC, and again (a
// failed batch, a killed function, a lost reply) after it. The archive in
// real S3 must hold one object per SQS message, dated by the day SQS first
// handed it over: the archive's key is deterministic per message, whatever
// the clock says when a redelivery is written.
func TestARecordWithoutTimeRedeliveredAfterMidnightOverwrites(t *testing.T) {
	e := newEnv(t)
	firstReceive := time.Date(2024, 3, 19, 23, 59, 59, 0, time.UTC)
	ms := strconv.FormatInt(firstReceive.UnixMilli(), 10)
	record := func(id, body string, attrs map[string]string) writerInput {
		b, _ := json.Marshal(map[string]any{"messageId": id, "receiptHandle": "rh-" + id, "body": body, "attributes": attrs,
			"messageAttributes": map[string]any{}, "md5OfBody": "x", "eventSource": "aws:sqs",
			"eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:demo-sfEventSqsToDbRecordsDeadLetterQueue", "awsRegion": "us-east-1"})
		return writerInput{Record: b}
	}
	ins := []writerInput{
		// not a Step Functions event: archived with null fields, time null
		record("m-not-event", `{"cumulus_meta":{"execution_name":"x"}}`, map[string]string{"ApproximateReceiveCount": "1", "SentTimestamp": ms, "ApproximateFirstReceiveTimestamp": ms}),
		// not JSON: archived raw
		record("m-not-json", `{not json`, map[string]string{"ApproximateReceiveCount": "1", "SentTimestamp": ms, "ApproximateFirstReceiveTimestamp": ms}),
		// only the sent time
		record("m-sent-only", `[]`, map[string]string{"SentTimestamp": ms}),
	}
	p := e.processor(nil)
	p.Now = func() time.Time { return firstReceive.Add(500 * time.Millisecond) }
	if f := feed(t, p, ins); len(f) != 0 {
		t.Fatalf("batch item failures %v", f)
	}
	first := e.keys(t)
	if len(first) != len(ins) {
		t.Fatalf("%d objects after the first delivery, want %d: %v", len(first), len(ins), first)
	}
	// Delivered again the next day (ApproximateReceiveCount grows; the
	// message id and first-receive time do not).
	p = e.processor(nil)
	p.Now = func() time.Time { return firstReceive.Add(26 * time.Hour) }
	if f := feed(t, p, ins); len(f) != 0 {
		t.Fatalf("batch item failures on the redelivery %v", f)
	}
	after := e.keys(t)
	if !slices.Equal(after, first) {
		t.Fatalf("the redelivery changed the archive (a duplicate per record written after midnight):\n before %v\n after  %v", first, after)
	}
	for _, k := range after {
		if date, _ := keyParts(t, k); date != firstReceive.Format(dla.DateLayout) {
			t.Errorf("%s: dated %s, want %s (the day SQS first handed the message over)", k, date, firstReceive.Format(dla.DateLayout))
		}
	}
}
