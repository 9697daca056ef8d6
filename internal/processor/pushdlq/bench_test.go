package pushdlq_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/deadletter/deadletter/internal/processor/pushdlq"
	"github.com/deadletter/deadletter/internal/pushpolicy"
	"github.com/deadletter/deadletter/internal/testsupport"
	"github.com/deadletter/deadletter/internal/testsupport/lambdart"
)

// BenchmarkHandleBatchOf10 is the handler's time for one event of ten
// records on fauxqs (seven replayed to two priority queues, three parked),
// the function's work per invocation without the Lambda runtime.
func BenchmarkHandleBatchOf10(b *testing.B) {
	c := testsupport.SQSClient(b)
	prefix := "pb" + testsupport.RandomHex(3) + "-"
	dlq := testsupport.CreateQueue(b, c, prefix+"push-dlq", nil)
	testsupport.CreateQueue(b, c, prefix+"P1", nil)
	testsupport.CreateQueue(b, c, prefix+"P2", nil)
	start, end, _ := pushpolicy.ParseWindow(winStart + "/" + winEnd)
	h := &pushdlq.Handler{API: c, Log: io.Discard, Config: pushpolicy.Config{DLQURL: dlq, BaseURL: strings.TrimSuffix(dlq, "push-dlq"),
		Policy: pushpolicy.Policy{Start: start, End: end, Codes: []int{1004}}}}
	var ev events.SQSEvent
	for i := range 10 {
		created := inWindow
		if i >= 7 {
			created = before
		}
		v := fmt.Sprint("push-", i)
		ev.Records = append(ev.Records, events.SQSMessage{MessageId: fmt.Sprint("m-", i), Body: body(1+i%2, created, 1004, v),
			MessageAttributes: map[string]events.SQSMessageAttribute{"origin": {DataType: "String", StringValue: &v}}})
	}
	b.ResetTimer()
	for range b.N {
		resp, err := h.Handle(context.Background(), ev)
		if err != nil || len(resp.BatchItemFailures) > 0 {
			b.Fatal(err, resp)
		}
	}
}

// BenchmarkRuntimeBatchOf10 is the real bootstrap under the Lambda runtime
// API harness: ns/op per warm invocation of ten records (seven replayed,
// three parked), plus the cold start and the peak memory of the process.
func BenchmarkRuntimeBatchOf10(b *testing.B) {
	c := testsupport.SQSClient(b)
	dlq, base := testsupport.NewPushQueues(b, c, "pr", 1, 2)
	rt := lambdart.Start(b, lambdart.Function{Bootstrap: lambdart.Build(b, "./cmd/push-dlq"),
		Env: lambdart.Env(lambdart.ServiceEnv(b, "sqs"), map[string]string{
			pushpolicy.EnvDLQURL: dlq, pushpolicy.EnvBaseURL: base, pushpolicy.EnvStartAt: winStart, pushpolicy.EnvEndAt: winEnd, pushpolicy.EnvErrorCodes: "1004"})})
	var ev events.SQSEvent
	for i := range 10 {
		created := inWindow
		if i >= 7 {
			created = before
		}
		v := fmt.Sprint("push-", i)
		ev.Records = append(ev.Records, events.SQSMessage{MessageId: fmt.Sprint("m-", i), Body: body(1+i%2, created, 1004, v),
			MessageAttributes: map[string]events.SQSMessageAttribute{"origin": {DataType: "String", StringValue: &v}}})
	}
	payload, _ := json.Marshal(ev)
	lambdart.BenchBatches(b, rt, payload)
}
