package sfevent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/testsupport"
)

// eventBody is a Step Functions status-change event whose Cumulus message
// writes one execution of the collection name___version.
func eventBody(name, collection, version string) string {
	arn := "arn:aws:states:us-east-1:123456789012:execution:demo-Test:" + name
	msg, _ := json.Marshal(map[string]any{
		"cumulus_meta": map[string]any{"execution_name": name, "state_machine": "arn:aws:states:us-east-1:123456789012:stateMachine:demo-Test",
			"workflow_start_time": 1709251200000},
		"meta":    map[string]any{"collection": map[string]any{"name": collection, "version": version}, "workflow_name": "Test"},
		"payload": map[string]any{},
	})
	ev, _ := json.Marshal(map[string]any{
		"version": "0", "id": "ev-" + name, "detail-type": "Step Functions Execution Status Change", "source": "aws.states",
		"time": "2024-03-01T00:00:05Z", "region": "us-east-1",
		"detail": map[string]any{"executionArn": arn, "stateMachineArn": "arn:aws:states:us-east-1:123456789012:stateMachine:demo-Test",
			"name": name, "status": "SUCCEEDED", "startDate": 1709251200000, "stopDate": 1709251205000, "input": string(msg), "output": string(msg)},
	})
	return string(ev)
}

func sqsRecord(id, body string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"messageId": id, "receiptHandle": "rh-" + id, "body": body,
		"attributes": map[string]string{"ApproximateReceiveCount": "1", "SentTimestamp": "1709251206000"}, "messageAttributes": map[string]any{},
		"md5OfBody": "x", "eventSource": "aws:sqs", "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:in", "awsRegion": "us-east-1"})
	return b
}

func sqsEvent(records ...json.RawMessage) []byte {
	b, _ := json.Marshal(map[string]any{"Records": records})
	return b
}

func failedIDs(t *testing.T, h *Handler, event []byte) []string {
	t.Helper()
	resp, err := h.Handle(context.Background(), event)
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{}
	for _, f := range resp.BatchItemFailures {
		ids = append(ids, f.ItemIdentifier)
	}
	return ids
}

// seed3Handler is a handler of a new seed-3 database, with a Step Functions
// fake that knows no execution, sending its dead letters to dlq; it
// returns the handler and the database.
func seed3Handler(t *testing.T, dlq SQSAPI) (*Handler, string) {
	t.Helper()
	dbURL := testsupport.NewCumulusDatabase(t, testsupport.Seed3Seed(t))
	return testHandler(t, dbURL, testsupport.NewSFNFake(t, nil), dlq), dbURL
}

// dlqWriter is a handler of a new seed-3 database (with a Step Functions
// fake that knows no execution) whose DeadLetterQueue is a new queue on
// the test SQS server, and what the tests look at.
type dlqWriter struct {
	h     *Handler
	c     *sqs.Client // direct, to read the DeadLetterQueue
	dlq   string
	dbURL string
	logs  bytes.Buffer // the handler's log
}

// newDLQWriter builds a dlqWriter whose handler sends to SQS through api
// (a proxy), or directly when api is nil.
func newDLQWriter(t *testing.T, api SQSAPI) *dlqWriter {
	t.Helper()
	c := testsupport.SQSClient(t)
	w := &dlqWriter{c: c, dlq: testsupport.NewQueue(t, c, "sfevent-dlq-", false)}
	if api == nil {
		api = c
	}
	w.h, w.dbURL = seed3Handler(t, api)
	w.h.DeadLetterQueue = w.dlq
	w.h.Log = &w.logs
	return w
}

// A write that fails for good goes to the DeadLetterQueue (real SQS) as
// v21 sends it, {...record, error}; the written record does not; neither
// is a batch item failure.
func TestWriterDeadLettersFailedWrites(t *testing.T) {
	w := newDLQWriter(t, nil)
	good, bad := sqsRecord("m-good", eventBody("good1", "MOD09GQ", "006")), sqsRecord("m-bad", eventBody("bad1", "NOPE", "1"))
	if ids := failedIDs(t, w.h, sqsEvent(good, bad)); len(ids) != 0 {
		t.Fatalf("batch item failures %v, want none", ids)
	}
	if !testsupport.ExecutionWritten(t, w.dbURL, "good1") || testsupport.ExecutionWritten(t, w.dbURL, "bad1") {
		t.Fatalf("executions: good1 written %v, bad1 written %v", testsupport.ExecutionWritten(t, w.dbURL, "good1"), testsupport.ExecutionWritten(t, w.dbURL, "bad1"))
	}
	msgs := testsupport.Drain(t, w.c, w.dlq, time.Second)
	if len(msgs) != 1 {
		t.Fatalf("%d messages in the DeadLetterQueue, want 1", len(msgs))
	}
	body := aws.ToString(msgs[0].Body)
	if e := gjson.Get(body, "error").Str; !strings.HasPrefix(e, "UnmetRequirementsError") {
		t.Errorf("error %q, want an UnmetRequirementsError", e)
	}
	var sent, orig map[string]any
	_ = json.Unmarshal([]byte(body), &sent)
	_ = json.Unmarshal(bad, &orig)
	delete(sent, "error")
	if !reflect.DeepEqual(sent, orig) {
		t.Errorf("the dead letter is not the record plus its error:\n got %v\nwant %v", sent, orig)
	}
}

// When the DeadLetterQueue cannot take the record (here: it does not
// exist), the record is a batch item failure: SQS keeps it, nothing is
// dropped. The written record is not retried.
func TestWriterRetriesWhatTheDeadLetterQueueRefuses(t *testing.T) {
	c := testsupport.SQSClient(t)
	dbURL := testsupport.NewCumulusDatabase(t, testsupport.Seed3Seed(t))
	h := testHandler(t, dbURL, testsupport.NewSFNFake(t, nil), c)
	h.DeadLetterQueue = testsupport.SQSEndpoint(t) + "/000000000000/no-such-queue-" + testsupport.RandomHex(4)
	ids := failedIDs(t, h, sqsEvent(sqsRecord("m-good", eventBody("good2", "MOD09GQ", "006")), sqsRecord("m-bad", eventBody("bad2", "NOPE", "1"))))
	if !reflect.DeepEqual(ids, []string{"m-bad"}) {
		t.Fatalf("batch item failures %v, want [m-bad]", ids)
	}
	h.DeadLetterQueue = ""
	ids = failedIDs(t, h, sqsEvent(sqsRecord("m-bad", eventBody("bad3", "NOPE", "1"))))
	if !reflect.DeepEqual(ids, []string{"m-bad"}) {
		t.Fatalf("without a DeadLetterQueue: batch item failures %v, want [m-bad] (v21 drops it)", ids)
	}
}

// With the database unreachable, every record is a batch item failure and
// none is dead-lettered: the failure is not the message's.
func TestWriterRetriesWhenTheDatabaseIsDown(t *testing.T) {
	c := testsupport.SQSClient(t)
	dlq := testsupport.NewQueue(t, c, "sfevent-dlq-", false)
	dbURL := testsupport.NewCumulusDatabase(t, testsupport.Seed3Seed(t))
	proxy := testsupport.NewTCPProxy(t, strings.Split(strings.SplitN(dbURL, "@", 2)[1], "/")[0])
	h := testHandler(t, proxy.ViaProxy(t, dbURL), testsupport.NewSFNFake(t, nil), c)
	h.DeadLetterQueue = dlq
	proxy.Cut()
	ids := failedIDs(t, h, sqsEvent(sqsRecord("m1", eventBody("down1", "MOD09GQ", "006")), sqsRecord("m2", eventBody("down2", "NOPE", "1"))))
	if !reflect.DeepEqual(ids, []string{"m1", "m2"}) {
		t.Fatalf("batch item failures %v, want [m1 m2]", ids)
	}
	if msgs := testsupport.Drain(t, c, dlq, 500*time.Millisecond); len(msgs) != 0 {
		t.Fatalf("%d records dead-lettered while the database was down", len(msgs))
	}
	proxy.Restore()
	if ids := failedIDs(t, h, sqsEvent(sqsRecord("m1", eventBody("down1", "MOD09GQ", "006")))); len(ids) != 0 {
		t.Fatalf("after the database came back: batch item failures %v", ids)
	}
	if !testsupport.ExecutionWritten(t, dbURL, "down1") {
		t.Fatal("down1 not written once the database came back")
	}
}

// A body that is not JSON can never be written: dead-lettered at once with
// the reason (v21 fails the whole batch, again and again).
func TestWriterDeadLettersUnparseableBodies(t *testing.T) {
	rec := &sqsRecorder{}
	h := testHandler(t, testsupport.NewCumulusDatabase(t, nil), testsupport.NewSFNFake(t, nil), rec)
	ids := failedIDs(t, h, sqsEvent(sqsRecord("m-junk", "{not json"), sqsRecord("m-deep", strings.Repeat("[", 600)+strings.Repeat("]", 600))))
	if len(ids) != 0 {
		t.Fatalf("batch item failures %v, want none", ids)
	}
	if len(rec.bodies) != 2 {
		t.Fatalf("%d dead letters, want 2", len(rec.bodies))
	}
	for _, b := range rec.bodies {
		if e := gjson.Get(b, "error").Str; e == "" {
			t.Errorf("dead letter without its reason: %.200s", b)
		}
	}
}

// configEnv is the function's environment (its topics and system bucket, no
// database), with extra set and drop left out.
func configEnv(extra map[string]string, drop ...string) map[string]string {
	env := map[string]string{
		"execution_sns_topic_arn": "arn:aws:sns:us-east-1:123456789012:demo-executions",
		"granule_sns_topic_arn":   "arn:aws:sns:us-east-1:123456789012:demo-granules",
		"pdr_sns_topic_arn":       "arn:aws:sns:us-east-1:123456789012:demo-pdrs",
		"system_bucket":           "demo-internal",
	}
	for k, v := range extra {
		env[k] = v
	}
	for _, k := range drop {
		delete(env, k)
	}
	return env
}

func TestLoadConfig(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want string // in the error; "" for none
	}{
		{configEnv(map[string]string{"DATABASE_URL": "postgres://x@h/db"}), ""},
		{configEnv(map[string]string{"databaseCredentialSecretArn": "arn:secret", "dbMaxPool": "8"}), ""},
		{configEnv(nil), "databaseCredentialSecretArn"},
		{configEnv(map[string]string{"databaseCredentialSecretArn": "a", "DATABASE_URL": "b"}), "not both"},
		{configEnv(map[string]string{"DATABASE_URL": "b", "dbMaxPool": "lots"}), `dbMaxPool="lots"`},
		{configEnv(map[string]string{"DATABASE_URL": "b", "dbMaxPool": "0"}), `dbMaxPool="0"`},
		{configEnv(map[string]string{"DATABASE_URL": "b"}, "granule_sns_topic_arn"), `granule_sns_topic_arn=""`},
		{configEnv(map[string]string{"DATABASE_URL": "b", "pdr_sns_topic_arn": "demo-pdrs"}), `pdr_sns_topic_arn="demo-pdrs"`},
	} {
		_, err := LoadConfig(func(k string) string { return tc.env[k] })
		var ee *EnvError
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: %v", tc.env, err)
		case tc.want != "" && (err == nil || !errors.As(err, &ee) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v: error %v, want one naming %s", tc.env, err, tc.want)
		}
	}
}
