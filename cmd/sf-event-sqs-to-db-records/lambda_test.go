package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/jackc/pgx/v5"
	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/recovery"
	"github.com/deadletter/deadletter/internal/testsupport"
	"github.com/deadletter/deadletter/internal/testsupport/lambdart"
)

// event is a Step Functions status-change event whose Cumulus message
// writes one execution; with collection NOPE___1 (not in the database) the
// write fails for good (UnmetRequirementsError) and the record belongs in
// the DeadLetterQueue.
func event(name, collection string) string {
	msg, _ := json.Marshal(map[string]any{
		"cumulus_meta": map[string]any{"execution_name": name, "state_machine": "arn:aws:states:us-east-1:123456789012:stateMachine:demo-Test",
			"workflow_start_time": 1709251200000},
		"meta":    map[string]any{"collection": map[string]any{"name": collection, "version": map[string]string{"MOD09GQ": "006"}[collection] + map[bool]string{true: "1"}[collection == "NOPE"]}, "workflow_name": "Test"},
		"payload": map[string]any{},
	})
	ev, _ := json.Marshal(map[string]any{
		"version": "0", "id": "ev-" + name, "detail-type": "Step Functions Execution Status Change", "source": "aws.states",
		"time": "2024-03-01T00:00:05Z", "region": "us-east-1",
		"detail": map[string]any{"executionArn": "arn:aws:states:us-east-1:123456789012:execution:demo-Test:" + name,
			"stateMachineArn": "arn:aws:states:us-east-1:123456789012:stateMachine:demo-Test", "name": name, "status": "SUCCEEDED",
			"startDate": 1709251200000, "stopDate": 1709251205000, "input": string(msg), "output": string(msg)},
	})
	return string(ev)
}

// fixture is an input queue of n messages (every third one bound to fail),
// a database, and the function's environment.
type fixture struct {
	c         *sqs.Client
	in, dlq   string
	dlqName   string
	dbURL     string
	proxy     *testsupport.TCPProxy
	env       map[string]string
	good, bad map[string]string // input message id -> execution name
	bin       string
	topics    *testsupport.NotificationTopics
}

func newFixture(t *testing.T, n int, createDLQ bool) *fixture {
	t.Helper()
	f := &fixture{c: testsupport.SQSClient(t), good: map[string]string{}, bad: map[string]string{}}
	f.bin = lambdart.Build(t, "./cmd/sf-event-sqs-to-db-records")
	f.in = testsupport.NewQueue(t, f.c, "sfevent-in-", false)
	f.dlqName = "sfevent-dlq-" + testsupport.RandomHex(4)
	if createDLQ {
		f.dlq = testsupport.CreateQueue(t, f.c, f.dlqName, nil)
	} else {
		f.dlq = f.in[:strings.LastIndex(f.in, "/")+1] + f.dlqName // the URL the queue will have
	}
	f.dbURL = testsupport.NewCumulusDatabase(t, testsupport.Seed3Seed(t))
	f.proxy = testsupport.NewTCPProxy(t, strings.Split(strings.SplitN(f.dbURL, "@", 2)[1], "/")[0])
	run := testsupport.RandomHex(4)
	bodies, names := make([]string, n), make([]string, n)
	for i := range n {
		coll := "MOD09GQ"
		if i%3 == 2 {
			coll = "NOPE"
		}
		names[i] = fmt.Sprintf("x%s-%03d", run, i)
		bodies[i] = event(names[i], coll)
	}
	ids := testsupport.SendBodies(t, f.c, f.in, bodies, nil)
	for i, id := range ids {
		if i%3 == 2 {
			f.bad[id] = names[i]
		} else {
			f.good[id] = names[i]
		}
	}
	f.topics = testsupport.NewNotificationTopics(t)
	f.env = lambdart.Env(lambdart.ServiceEnv(t, "sqs", "sns", "s3"), map[string]string{
		"DATABASE_URL": f.proxy.ViaProxy(t, f.dbURL), "DeadLetterQueue": f.dlq, "dbMaxPool": "1", "system_bucket": "demo-internal",
		"execution_sns_topic_arn": f.topics.Topics.Execution, "granule_sns_topic_arn": f.topics.Topics.Granule,
		"pdr_sns_topic_arn": f.topics.Topics.Pdr,
	})
	return f
}

func (f *fixture) esm() *lambdart.ESM {
	return &lambdart.ESM{Client: f.c, QueueURL: f.in, VisibilityTimeout: 2, ReportBatchItemFailures: true}
}

// conserved checks that every input message is accounted for once the
// queue is drained: each good one written (and never dead-lettered), each
// bad one dead-lettered with its error. It returns the dead letters beyond
// one per bad message: the duplicates at-least-once delivery allows.
func (f *fixture) conserved(t *testing.T) (duplicates int) {
	t.Helper()
	if !testsupport.QueueEmpty(t, f.c, f.in) {
		t.Fatal("the input queue still holds messages")
	}
	conn, err := pgx.Connect(context.Background(), f.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	written := map[string]bool{}
	rows, err := conn.Query(context.Background(), `SELECT arn FROM executions`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var arn string
		_ = rows.Scan(&arn)
		written[arn[strings.LastIndex(arn, ":")+1:]] = true
	}
	rows.Close()
	lettered := map[string]int{}
	for _, m := range testsupport.Drain(t, f.c, f.dlq, time.Second) {
		b := aws.ToString(m.Body)
		id := gjson.Get(b, "messageId").Str
		if !strings.HasPrefix(gjson.Get(b, "error").Str, "UnmetRequirementsError") {
			t.Errorf("dead letter %s without its error: %.200s", id, b)
		}
		lettered[id]++
	}
	for id, name := range f.good {
		if !written[name] {
			t.Errorf("lost: %s (%s) neither written nor dead-lettered", id, name)
		}
		if lettered[id] > 0 {
			t.Errorf("%s was written, yet dead-lettered", id)
		}
	}
	for id, name := range f.bad {
		switch {
		case lettered[id] == 0:
			t.Errorf("lost: %s (%s) not in the DeadLetterQueue", id, name)
		case written[name]:
			t.Errorf("%s written though its collection is missing", id)
		}
		duplicates += max(lettered[id]-1, 0)
	}
	return duplicates
}

func drain(t *testing.T, f *fixture, rt *lambdart.Runtime) lambdart.DrainStats {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	st, err := f.esm().Drain(ctx, rt, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestLambdaWritesAndDeadLetters: the real bootstrap under the runtime
// API, fed by the event-source mapping: written records deleted, failed
// ones in the DeadLetterQueue with their error, nothing lost.
func TestLambdaWritesAndDeadLetters(t *testing.T) {
	f := newFixture(t, 30, true)
	rt := lambdart.Start(t, lambdart.Function{Bootstrap: f.bin, Env: f.env})
	st := drain(t, f, rt)
	if d := f.conserved(t); d != 0 {
		t.Errorf("%d duplicates without a fault", d)
	}
	if n := len(f.topics.Keys(t, recovery.TopicExecution)); n != len(f.good) {
		t.Errorf("%d execution notifications, want one per written record (%d)", n, len(f.good))
	}
	if st.Crashes+st.FunctionErrors != 0 {
		t.Errorf("crashes %d, function errors %d", st.Crashes, st.FunctionErrors)
	}
	lines := rt.JSONLogs()
	records, summaries := 0, 0
	for _, l := range lines {
		switch l["type"] {
		case "record":
			records++
			if l["message_id"] == "" || l["outcome"] == "" {
				t.Errorf("record log line without its id or outcome: %v", l)
			}
		case "summary":
			summaries++
		}
	}
	if records != 30 || summaries != st.Invocations {
		t.Errorf("%d record lines for 30 records, %d summaries for %d invocations", records, summaries, st.Invocations)
	}
	t.Logf("db writer under the runtime API: %s", rt.Stats().Summary())
}

// Faults, each with the conservation check: no message lost; duplicates
// only for the batch in flight when the function died.
func TestLambdaConservationUnderFaults(t *testing.T) {
	t.Run("database stopped mid-batch", func(t *testing.T) {
		f := newFixture(t, 30, true)
		rt := lambdart.Start(t, lambdart.Function{Bootstrap: f.bin, Env: f.env})
		var cut atomic.Bool
		stop := make(chan struct{})
		defer close(stop)
		go func() { // cut the database during the second batch, after its third record
			for {
				select {
				case <-stop:
					return
				case <-time.After(time.Millisecond):
				}
				if strings.Count(string(rt.Logs()), `"type":"record"`) >= 13 {
					f.proxy.Cut()
					cut.Store(true)
					time.Sleep(1500 * time.Millisecond)
					f.proxy.Restore()
					return
				}
			}
		}()
		st := drain(t, f, rt)
		if !cut.Load() {
			t.Fatal("the database was never cut")
		}
		retried := 0
		for _, l := range rt.JSONLogs() {
			if l["type"] == "record" && l["outcome"] == "retry" {
				retried++
			}
		}
		if retried == 0 {
			t.Fatal("no record was retried: the fault did not hit a batch")
		}
		d := f.conserved(t)
		t.Logf("database cut: %d records retried, %d duplicates, %d invocations", retried, d, st.Invocations)
		if d != 0 {
			t.Errorf("%d duplicates: a retried record was dead-lettered too", d)
		}
	})
	t.Run("function killed mid-invocation", func(t *testing.T) {
		f := newFixture(t, 30, true)
		rt := lambdart.Start(t, lambdart.Function{Bootstrap: f.bin, Env: f.env})
		rt.KillDuringOnLog(2, `"type":"record"`)
		st := drain(t, f, rt)
		if st.Crashes != 1 {
			t.Fatalf("%d crashes, want the one kill", st.Crashes)
		}
		d := f.conserved(t)
		t.Logf("killed mid-invocation: %d duplicates (at most the killed batch's)", d)
		if d > 10 {
			t.Errorf("%d duplicates, more than the batch in flight", d)
		}
	})
	t.Run("DeadLetterQueue missing", func(t *testing.T) {
		f := newFixture(t, 30, false)
		rt := lambdart.Start(t, lambdart.Function{Bootstrap: f.bin, Env: f.env})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		st, _ := f.esm().Drain(ctx, rt, 3*time.Second) // never empties: the bad records come back
		cancel()
		if st.Deleted != len(f.good) {
			t.Errorf("deleted %d, want the %d good records", st.Deleted, len(f.good))
		}
		if st.Failed == 0 {
			t.Fatal("no batch item failure while the DeadLetterQueue is missing")
		}
		// Once the queue exists, the same records reach it: none was dropped.
		testsupport.CreateQueue(t, f.c, f.dlqName, nil)
		drain(t, f, rt)
		if d := f.conserved(t); d != 0 {
			t.Errorf("%d duplicates", d)
		}
	})
}

// TestLambdaColdStartNamesTheBadVariable: a bad environment fails the cold
// start with the variable and its value.
func TestLambdaColdStartNamesTheBadVariable(t *testing.T) {
	bin := lambdart.Build(t, "./cmd/sf-event-sqs-to-db-records")
	rt := lambdart.Start(t, lambdart.Function{Bootstrap: bin, Env: map[string]string{"DATABASE_URL": "postgres://x@127.0.0.1:1/db", "dbMaxPool": "many",
		"execution_sns_topic_arn": "arn:aws:sns:us-east-1:123456789012:e", "granule_sns_topic_arn": "arn:aws:sns:us-east-1:123456789012:g",
		"pdr_sns_topic_arn": "arn:aws:sns:us-east-1:123456789012:p"}})
	_, err := rt.Invoke(context.Background(), []byte(`{"Records":[]}`))
	if err == nil || !strings.Contains(err.Error(), `dbMaxPool="many"`) {
		t.Fatalf("invoke error %v, want a failed init naming dbMaxPool=\"many\"", err)
	}
}
