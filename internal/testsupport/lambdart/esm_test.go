package lambdart_test

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/deadletter/deadletter/internal/testsupport"
	"github.com/deadletter/deadletter/internal/testsupport/lambdart"
)

type esmFixture struct {
	c   *sqs.Client
	url string
	rt  *lambdart.Runtime
	esm *lambdart.ESM
}

func newESM(t *testing.T, reportFailures bool, env map[string]string) *esmFixture {
	t.Helper()
	c := testsupport.SQSClient(t)
	url := testsupport.NewQueue(t, c, "lambdart-", false)
	return &esmFixture{c: c, url: url, rt: startFn(t, env),
		esm: &lambdart.ESM{Client: c, QueueURL: url, VisibilityTimeout: 2, ReportBatchItemFailures: reportFailures}}
}

// pollUntil polls until a batch arrives (or 20 s pass: a failed batch
// comes back after the 2 s visibility timeout).
func (f *esmFixture) pollUntil(t *testing.T) lambdart.PollResult {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		res, err := f.esm.PollOnce(context.Background(), f.rt)
		if err != nil {
			t.Fatal(err)
		}
		if res.Received > 0 {
			return res
		}
	}
	t.Fatal("nothing came back")
	return lambdart.PollResult{}
}

func bodiesOf(res lambdart.PollResult) []string {
	var b []string
	for _, r := range res.Event.Records {
		b = append(b, r.Body)
	}
	slices.Sort(b)
	return b
}

func idsOf(res lambdart.PollResult, body string) []string {
	var ids []string
	for _, r := range res.Event.Records {
		if r.Body == body {
			ids = append(ids, r.MessageId)
		}
	}
	return ids
}

func TestESMDeletesSuccessesAndReportedFailuresComeBack(t *testing.T) {
	f := newESM(t, true, nil)
	sent := testsupport.SendBodies(t, f.c, f.url, []string{"ok1", "fail", "ok2"}, nil)
	res := f.pollUntil(t)
	if res.Received != 3 || res.Deleted != 2 || res.Failed != 1 || res.Err != nil || !slices.Equal(res.FailedIDs, []string{sent[1]}) {
		t.Fatalf("first poll: %+v", res)
	}
	back := f.pollUntil(t)
	if !slices.Equal(bodiesOf(back), []string{"fail"}) || back.Event.Records[0].MessageId != sent[1] || back.Event.Records[0].Attributes["ApproximateReceiveCount"] != "2" {
		t.Fatalf("only the reported failure should come back, received twice: %+v", back.Event)
	}
}

func TestESMWithoutReportBatchItemFailuresDeletesTheWholeBatch(t *testing.T) {
	f := newESM(t, false, nil)
	testsupport.SendBodies(t, f.c, f.url, []string{"ok1", "fail", "ok2"}, nil)
	res := f.pollUntil(t)
	if res.Received != 3 || res.Deleted != 3 || res.Failed != 0 {
		t.Fatalf("poll: %+v", res)
	}
	if !testsupport.QueueEmpty(t, f.c, f.url) {
		t.Fatal("queue not empty")
	}
}

func TestESMFunctionErrorDeletesNothing(t *testing.T) {
	f := newESM(t, true, nil)
	testsupport.SendBodies(t, f.c, f.url, []string{"a", "error"}, nil)
	res := f.pollUntil(t)
	var fe *lambdart.FunctionError
	if res.Received != 2 || res.Deleted != 0 || res.Failed != 2 || !errors.As(res.Err, &fe) {
		t.Fatalf("poll: %+v", res)
	}
	if back := f.pollUntil(t); !slices.Equal(bodiesOf(back), []string{"a", "error"}) {
		t.Fatalf("the whole batch should come back: %v", bodiesOf(back))
	}
}

func TestESMUnknownItemIdentifierFailsTheWholeBatch(t *testing.T) {
	f := newESM(t, true, nil)
	testsupport.SendBodies(t, f.c, f.url, []string{"a", "bad-id"}, nil)
	res := f.pollUntil(t)
	if res.Received != 2 || res.Deleted != 0 || !errors.Is(res.Err, lambdart.ErrBadBatchResponse) {
		t.Fatalf("poll: %+v", res)
	}
}

// A crash mid-batch returns the whole batch, including the records the
// function had already handled (the duplicates at-least-once allows), and
// the next invocation is a cold start. Drain then finishes the queue.
func TestESMCrashReturnsTheWholeBatchToAColdStart(t *testing.T) {
	f := newESM(t, true, nil)
	testsupport.SendBodies(t, f.c, f.url, []string{"a", "crash-once", "b"}, nil)
	res := f.pollUntil(t)
	if !errors.Is(res.Err, lambdart.ErrCrashed) || res.Deleted != 0 || res.Failed != 3 {
		t.Fatalf("crash poll: %+v", res)
	}
	ds, err := f.esm.Drain(context.Background(), f.rt, 4*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if ds.Received != 3 || ds.Deleted != 3 || ds.Crashes != 0 || ds.Invocations != 1 || !ds.Results[0].Invocation.Cold {
		t.Fatalf("drain: %+v", ds)
	}
	if !testsupport.QueueEmpty(t, f.c, f.url) {
		t.Fatal("queue not empty")
	}
	if s := f.rt.Stats(); s.Crashes != 1 || s.ColdStarts != 2 {
		t.Fatalf("stats: %+v", s)
	}
}

func TestESMKillDuringLosesNothing(t *testing.T) {
	f := newESM(t, true, nil)
	var bodies []string
	for i := range 25 {
		bodies = append(bodies, "m"+string(rune('a'+i)))
	}
	testsupport.SendBodies(t, f.c, f.url, bodies, nil)
	f.rt.KillDuring(2)
	ds, err := f.esm.Drain(context.Background(), f.rt, 4*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	handled := map[string]int{}
	for _, l := range f.rt.JSONLogs() {
		if l["msg"] == "record" {
			handled[l["body"].(string)]++
		}
	}
	if ds.Crashes != 1 || ds.Deleted != 25 || ds.Received != 25+ds.Results[1].Received || len(handled) != 25 {
		t.Fatalf("drain %+v, handled %v", ds, handled)
	}
	if !testsupport.QueueEmpty(t, f.c, f.url) {
		t.Fatal("queue not empty")
	}
}

func TestESMDrainRetriesReportedFailures(t *testing.T) {
	f := newESM(t, true, nil)
	f.esm.VisibilityTimeout = 1
	bodies := []string{"fail-once", "fail-once"}
	for range 23 {
		bodies = append(bodies, "ok")
	}
	testsupport.SendBodies(t, f.c, f.url, bodies, nil)
	ds, err := f.esm.Drain(context.Background(), f.rt, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if ds.Received != 27 || ds.Deleted != 25 || ds.Failed != 2 || ds.Invocations < 4 {
		t.Fatalf("drain: %+v", ds)
	}
	if !testsupport.QueueEmpty(t, f.c, f.url) {
		t.Fatal("queue not empty")
	}
}

// The function gets the record Lambda would give it.
func TestESMEventHasLambdasShape(t *testing.T) {
	f := newESM(t, true, nil)
	body := `{"hello":"world"}`
	sent, err := f.c.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(f.url), MessageBody: aws.String(body),
		MessageAttributes: map[string]types.MessageAttributeValue{
			"s":   {DataType: aws.String("String"), StringValue: aws.String("v")},
			"n":   {DataType: aws.String("Number"), StringValue: aws.String("42")},
			"bin": {DataType: aws.String("Binary"), BinaryValue: []byte{1, 2, 3}},
		}})
	if err != nil {
		t.Fatal(err)
	}
	testsupport.SendBodies(t, f.c, f.url, []string{"plain"}, nil)
	attrs, err := f.c.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(f.url), AttributeNames: []types.QueueAttributeName{"QueueArn"}})
	if err != nil {
		t.Fatal(err)
	}
	arn := attrs.Attributes["QueueArn"]

	var recs []map[string]any
	for len(recs) < 2 {
		res := f.pollUntil(t)
		for _, l := range lambdart.JSONLines(res.Invocation.Logs) {
			if l["msg"] == "record" {
				recs = append(recs, l["record"].(map[string]any))
			}
		}
	}
	for _, r := range recs {
		sum := md5.Sum([]byte(r["body"].(string)))
		if r["eventSource"] != "aws:sqs" || r["eventSourceARN"] != arn || r["awsRegion"] != "us-east-1" ||
			r["md5OfBody"] != hex.EncodeToString(sum[:]) || r["receiptHandle"] == "" || r["messageId"] == "" {
			t.Fatalf("record: %v", r)
		}
		a := r["attributes"].(map[string]any)
		for _, k := range []string{"ApproximateReceiveCount", "SentTimestamp", "SenderId", "ApproximateFirstReceiveTimestamp"} {
			if a[k] == nil || a[k] == "" {
				t.Fatalf("attribute %s missing: %v", k, a)
			}
		}
		if r["body"] != body {
			if ma := r["messageAttributes"].(map[string]any); len(ma) != 0 {
				t.Fatalf("plain message has attributes: %v", ma)
			}
			continue
		}
		if r["messageId"] != aws.ToString(sent.MessageId) || r["md5OfMessageAttributes"] != aws.ToString(sent.MD5OfMessageAttributes) {
			t.Fatalf("record: %v, sent %+v", r, sent)
		}
		ma := r["messageAttributes"].(map[string]any)
		want := map[string]map[string]any{
			"s":   {"stringValue": "v", "dataType": "String"},
			"n":   {"stringValue": "42", "dataType": "Number"},
			"bin": {"binaryValue": "AQID", "dataType": "Binary"},
		}
		for k, w := range want {
			got, _ := ma[k].(map[string]any)
			for wk, wv := range w {
				if got[wk] != wv {
					t.Fatalf("attribute %s: %v, want %v", k, got, w)
				}
			}
			if l, ok := got["stringListValues"].([]any); !ok || len(l) != 0 {
				t.Fatalf("attribute %s: stringListValues should be [] as in Lambda: %v", k, got)
			}
			if l, ok := got["binaryListValues"].([]any); !ok || len(l) != 0 {
				t.Fatalf("attribute %s: binaryListValues should be []: %v", k, got)
			}
		}
	}
}
