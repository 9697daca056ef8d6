package pushdlq_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/deadletter/deadletter/internal/pushpolicy"
	"github.com/deadletter/deadletter/internal/testsupport"
	"github.com/deadletter/deadletter/internal/testsupport/lambdart"
)

// Through the real bootstrap and the event source mapping: bodies and
// attributes at SQS's edges arrive byte for byte, each once. Bodies hold
// the characters SQS allows that JSON escapes or that are easy to
// mangle (tab, CR, LF, U+2028, <>&, U+FFFD, U+E000, an escaped NUL), up to 256 KiB of
// body plus attributes (so batches split by bytes, and a message of more
// than 256 KiB goes alone); every message carries the 10 attributes SQS
// allows, binary ones with custom types and every byte value. Eligible
// ones land once in P1, the rest (a malformed body included) are parked
// once in the DLQ with their attributes.
func TestRuntimeEdgeBodiesAndTenAttributesArriveIntact(t *testing.T) {
	endpoint := testsupport.SQSEndpoint(t)
	c := testsupport.SQSClientAt(endpoint)
	dlq, base := testsupport.NewPushQueues(t, c, "fid", 1)
	allBytes := make([]byte, 256)
	for i := range allBytes {
		allBytes[i] = byte(i)
	}
	attrs := func(i int) map[string]types.MessageAttributeValue {
		m := map[string]types.MessageAttributeValue{
			"idx":      {DataType: aws.String("Number"), StringValue: aws.String(fmt.Sprint(i))},
			"bin":      {DataType: aws.String("Binary"), BinaryValue: allBytes},
			"bin.gz":   {DataType: aws.String("Binary.gzip"), BinaryValue: []byte{0x1f, 0x8b, 0, byte(i)}},
			"num.f":    {DataType: aws.String("Number.float"), StringValue: aws.String("-1.50e3")},
			"unicode":  {DataType: aws.String("String"), StringValue: aws.String("ü€𝄞\u2028<&>\t\r\n")},
			"str.json": {DataType: aws.String("String.json"), StringValue: aws.String(`{"a":"\u0000"}`)},
		}
		for k := len(m); k < 10; k++ {
			m[fmt.Sprint("pad", k)] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(strings.Repeat("p", 100))}
		}
		return m
	}
	// (fauxqs refuses characters above U+FFFD in a body, which SQS allows.)
	odd := "\t\r\n\u2028\u2029<>&\ufffd\ue000\\u0000 \"quoted\" ü€"
	oddJSON, _ := json.Marshal(odd)
	eligible := func(i, pad int) string {
		return fmt.Sprintf(`{"action":"push","priority":1,"createdAt":%d,"errorCode":1004,"errorMessage":%s,"i":%d,"pad":"%s"}`,
			inWindow+int64(i), oddJSON, i, strings.Repeat("x", pad))
	}
	var bodies []string
	want := map[int]bool{} // i -> eligible
	attrBytes := 0
	for k, v := range attrs(0) {
		attrBytes += len(k) + len(aws.ToString(v.DataType)) + len(v.BinaryValue) + len(aws.ToString(v.StringValue))
	}
	for i := range 14 {
		var b string
		switch {
		case i < 6: // about 100 KiB each: batches split by bytes
			b = eligible(i, 100<<10)
		case i == 6: // body + attributes exactly 256 KiB
			b = eligible(i, 0)
			b = eligible(i, 256<<10-attrBytes-len(b)) // attrs(6) is as long as attrs(0)
		case i == 7: // more than 256 KiB with its attributes: alone
			b = eligible(i, 256<<10)
		case i == 8:
			b = "not json\t\r\n" + odd
		case i == 9:
			b = fmt.Sprintf(`{"action":"push","priority":1,"createdAt":%d,"errorCode":1004,"errorMessage":%s}`, before, oddJSON)
		default:
			b = eligible(i, 10)
		}
		bodies = append(bodies, b)
		want[i] = i != 8 && i != 9
	}
	var ids []string
	for i, b := range bodies { // one at a time: a batch of them is over SQS's request limit
		out, err := c.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(dlq), MessageBody: aws.String(b), MessageAttributes: attrs(i)})
		if err != nil {
			t.Fatalf("seed body %d: %v", i, err)
		}
		ids = append(ids, aws.ToString(out.MessageId))
	}
	rt := lambdart.Start(t, lambdart.Function{Bootstrap: lambdart.Build(t, "./cmd/push-dlq"), Name: "push-dlq",
		Env: lambdart.Env(processorEnv(dlq, base, "1004"), lambdart.ServiceEnv(t, "sqs"))})
	esm := &lambdart.ESM{Client: c, QueueURL: dlq, VisibilityTimeout: 30, ReportBatchItemFailures: true}
	w := &rtWorld{t: t, c: c, dlq: dlq, base: base, rt: rt, esm: esm, bodies: bodies, ids: ids}
	s := w.drain(time.Second)
	if s.Failed != 0 || s.Crashes != 0 || s.BadResponses != 0 {
		t.Fatalf("drain: %s\n%s", drained(s), rt.Logs())
	}
	check := func(where string, m types.Message) int {
		i := -1
		fmt.Sscan(aws.ToString(m.MessageAttributes["idx"].StringValue), &i)
		if i < 0 || i >= len(bodies) {
			t.Errorf("%s: a message that was never seeded: %.80q", where, aws.ToString(m.Body))
			return -1
		}
		if aws.ToString(m.Body) != bodies[i] {
			t.Errorf("%s: body %d changed: %d bytes, want %d", where, i, len(aws.ToString(m.Body)), len(bodies[i]))
		}
		wa := attrs(i)
		if len(m.MessageAttributes) != len(wa) {
			t.Errorf("%s: body %d has %d attributes, want %d", where, i, len(m.MessageAttributes), len(wa))
		}
		for k, a := range wa {
			g := m.MessageAttributes[k]
			if aws.ToString(g.DataType) != aws.ToString(a.DataType) || aws.ToString(g.StringValue) != aws.ToString(a.StringValue) || !bytes.Equal(g.BinaryValue, a.BinaryValue) {
				t.Errorf("%s: body %d: attribute %s is %+v, want %+v", where, i, k, g, a)
			}
		}
		return i
	}
	inP1 := map[int]int{}
	for _, m := range testsupport.Drain(t, c, pushpolicy.TargetURL(base, 1), 2*time.Second) {
		if i := check("P1", m); i >= 0 {
			inP1[i]++
		}
	}
	for i := range bodies {
		if n := inP1[i]; want[i] != (n == 1) || n > 1 {
			t.Errorf("body %d is in P1 %d times (eligible: %v)", i, n, want[i])
		}
	}
	// The parked ones are delayed 900 s: count them, and read their
	// outcome in the function's log.
	held, delayed := w.dlqCounts()
	if held != 0 || delayed != 2 {
		t.Errorf("the DLQ holds %d to deliver and %d parked, want 0 and 2", held, delayed)
	}
	recs := w.records()
	for i, id := range ids {
		l := recs[id]
		if wantOut := map[bool]string{true: "sent", false: "parked"}[want[i]]; l["outcome"] != wantOut {
			t.Errorf("body %d logged %v, want %s", i, l, wantOut)
		}
	}
}
