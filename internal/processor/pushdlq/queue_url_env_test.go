package pushdlq_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/deadletter/deadletter/internal/processor/pushdlq"
	"github.com/deadletter/deadletter/internal/pushpolicy"
	"github.com/deadletter/deadletter/internal/testsupport"
	"github.com/deadletter/deadletter/internal/testsupport/lambdart"
)

// PUSH_DLQ_QUEUE_URL and PUSH_QUEUE_BASE_URL that are not queue URLs fail
// the cold start, naming the variable and the value. Before, the function
// started with a queue name (which `pushdlq replay --from-env` accepts, as
// it resolves names) and sent to it as given: SQS answers
// NonExistentQueue, so every park (or every replay) failed and came back
// as a batch item failure, forever, until the DLQ's retention dropped it.
func TestQueueVariablesMustBeURLs(t *testing.T) {
	endpoint := testsupport.SQSEndpoint(t)
	c := testsupport.SQSClientAt(endpoint)
	dlq, base := testsupport.NewPushQueues(t, c, "pf", 1)
	awsEnv(t, endpoint)
	good := processorEnv(dlq, base, "1004")
	if _, err := pushdlq.New(context.Background(), func(k string) string { return good[k] }, &bytes.Buffer{}); err != nil {
		t.Fatalf("good environment: %v", err)
	}
	name := dlq[strings.LastIndex(dlq, "/")+1:]
	for _, bad := range []struct{ name, value string }{
		{pushpolicy.EnvDLQURL, name}, // the queue's name: pushdlq replay resolves it, the function would not
		{pushpolicy.EnvDLQURL, "sqs.us-east-1.amazonaws.com/000000000000/" + name},
		{pushpolicy.EnvDLQURL, "arn:aws:sqs:us-east-1:000000000000:" + name},
		{pushpolicy.EnvDLQURL, "https://sqs.us-east-1.amazonaws.com"},
		{pushpolicy.EnvDLQURL, dlq + "?x=1"},
		{pushpolicy.EnvBaseURL, "push-queue-"},
		{pushpolicy.EnvBaseURL, "ftp://sqs/000000000000/push-queue-"},
	} {
		env := processorEnv(dlq, base, "1004")
		env[bad.name] = bad.value
		h, err := pushdlq.New(context.Background(), func(k string) string { return env[k] }, &bytes.Buffer{})
		if err == nil {
			// What the function would do with it: the park fails, and the
			// record comes back.
			ev := events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m1", Body: "not json"}}}
			resp, _ := h.Handle(context.Background(), ev)
			t.Errorf("%s=%q: cold start succeeded; a malformed body then gets batch item failures %v", bad.name, bad.value, resp.BatchItemFailures)
			continue
		}
		if want := bad.name + `="` + bad.value + `"`; !strings.Contains(err.Error(), want) {
			t.Errorf("%s=%q: error %v, want it to name %s", bad.name, bad.value, err, want)
		}
	}
}

// The same through the real bootstrap: each bad queue variable is an init
// error naming it, and the function never asks for an event.
func TestRuntimeBadQueueVariablesFailTheColdStart(t *testing.T) {
	endpoint := testsupport.SQSEndpoint(t)
	c := testsupport.SQSClientAt(endpoint)
	dlq, base := testsupport.NewPushQueues(t, c, "pf", 1)
	fifo := testsupport.CreateQueue(t, c, "pf"+testsupport.RandomHex(3)+"-dlq.fifo", map[string]string{"FifoQueue": "true"})
	for _, bad := range []struct{ name, value string }{
		{pushpolicy.EnvDLQURL, fifo},
		{pushpolicy.EnvDLQURL, dlq[strings.LastIndex(dlq, "/")+1:]},
		{pushpolicy.EnvBaseURL, "push-queue-"},
	} {
		env := lambdart.Env(processorEnv(dlq, base, "1004"), lambdart.ServiceEnv(t, "sqs"), map[string]string{bad.name: bad.value})
		rt := lambdart.Start(t, lambdart.Function{Bootstrap: lambdart.Build(t, "./cmd/push-dlq"), Name: "push-dlq", Env: env})
		_, err := rt.Invoke(context.Background(), []byte(`{"Records":[]}`))
		if !errors.Is(err, lambdart.ErrInitFailed) || !strings.Contains(err.Error(), bad.name+`="`+bad.value+`"`) {
			t.Errorf("%s=%q: invoke: %v", bad.name, bad.value, err)
		}
		if s := rt.Stats(); s.ColdStarts != 0 || s.Invocations != 0 {
			t.Errorf("%s=%q: stats %+v", bad.name, bad.value, s)
		}
	}
}
