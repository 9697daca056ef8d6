package main

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/recovery"
	"github.com/deadletter/deadletter/internal/testsupport"
	"github.com/deadletter/deadletter/internal/testsupport/lambdart"
)

// TestLambdaDeadLetterSendWhoseReplyIsLost: the DeadLetterQueue takes the
// first sends but their replies are lost (the send took effect; the
// function sees a 500). Nothing may be lost: every bad record ends in the
// DeadLetterQueue with its error, every good one written; the extra dead
// letters (SQS has no idempotent send on a standard queue) are counted and
// are at most one per lost reply.
func TestLambdaDeadLetterSendWhoseReplyIsLost(t *testing.T) {
	f := newFixture(t, 30, true)
	proxy := testsupport.NewProxy(t, testsupport.SQSEndpoint(t))
	lostReplies := proxy.LoseFirstReplies("SendMessage", 4)
	env := lambdart.Env(f.env, map[string]string{"AWS_ENDPOINT_URL_SQS": proxy.URL})
	rt := lambdart.Start(t, lambdart.Function{Bootstrap: f.bin, Env: env})
	st := drain(t, f, rt)
	lost := lostReplies()
	if lost != 4 {
		t.Fatalf("%d replies lost: the fault did not happen", lost)
	}
	d := f.conserved(t)
	t.Logf("DeadLetterQueue replies lost: %d; %d duplicate dead letters; %d records retried; %d invocations", lost, d, st.Failed, st.Invocations)
	if d > lost {
		t.Errorf("%d duplicate dead letters for %d lost replies", d, lost)
	}
}

// TestLambdaPublishFailingAfterTheWrite: SNS refuses the execution
// notification of one record after its write committed. That record must
// reach the DeadLetterQueue with the publish error (so that recovering it
// publishes again), be deleted from the input queue (not retried for
// ever), and its row stay written; the others are untouched.
func TestLambdaPublishFailingAfterTheWrite(t *testing.T) {
	f := newFixture(t, 6, true)
	var victimID, victim string
	for id, name := range f.good {
		victimID, victim = id, name
		break
	}
	proxy := testsupport.NewProxy(t, testsupport.SQSEndpoint(t))
	var mu sync.Mutex
	refused := 0
	proxy.SetHook(func(op string, body []byte) ([]byte, *testsupport.Reply) {
		if bytes.Contains(body, []byte("Action=Publish")) && bytes.Contains(body, []byte(victim)) {
			mu.Lock()
			refused++
			mu.Unlock()
			return nil, &testsupport.Reply{Status: 400, Body: `<ErrorResponse><Error><Type>Sender</Type><Code>AuthorizationError</Code><Message>refused by the test</Message></Error></ErrorResponse>`}
		}
		return nil, nil
	})
	env := lambdart.Env(f.env, map[string]string{"AWS_ENDPOINT_URL_SNS": proxy.URL})
	rt := lambdart.Start(t, lambdart.Function{Bootstrap: f.bin, Env: env})
	st := drain(t, f, rt)
	if refused == 0 {
		t.Fatal("no publish refused: the fault did not happen")
	}
	if st.Failed != 0 {
		t.Errorf("%d batch item failures: a record whose write committed is retried", st.Failed)
	}
	if !testsupport.QueueEmpty(t, f.c, f.in) {
		t.Fatal("the input queue still holds messages")
	}
	lettered := map[string]string{}
	for _, m := range testsupport.Drain(t, f.c, f.dlq, time.Second) {
		b := aws.ToString(m.Body)
		lettered[gjson.Get(b, "messageId").Str] = gjson.Get(b, "error").Str
	}
	if e, ok := lettered[victimID]; !ok || !strings.Contains(e, "publishing the execution notification") {
		t.Errorf("the record whose notification failed: dead letter %v, error %q", ok, e)
	}
	for id := range f.bad {
		if !strings.HasPrefix(lettered[id], "UnmetRequirementsError") {
			t.Errorf("bad record %s: dead letter error %q", id, lettered[id])
		}
	}
	if len(lettered) != len(f.bad)+1 {
		t.Errorf("%d dead letters, want %d", len(lettered), len(f.bad)+1)
	}
	published := strings.Join(f.topics.Keys(t, recovery.TopicExecution), "\n")
	for _, name := range f.good {
		if strings.Contains(published, name) != (name != victim) {
			t.Errorf("%s: execution notification published %v", name, strings.Contains(published, name))
		}
	}
	written := 0
	for _, name := range f.good {
		if testsupport.ExecutionWritten(t, f.dbURL, name) {
			written++
		}
	}
	if written != len(f.good) {
		t.Errorf("%d of %d good executions written", written, len(f.good))
	}
}
