package pushdlq_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
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
	dlq, base := testsupport.NewPushQueues(b, c, "pb", 1, 2)
	start, end, _ := pushpolicy.ParseWindow(winStart + "/" + winEnd)
	h := &pushdlq.Handler{API: c, Log: io.Discard, Config: pushpolicy.Config{DLQURL: dlq, BaseURL: base,
		Policy: pushpolicy.Policy{Start: start, End: end, Codes: []int{1004}}}}
	ev := batchOf10()
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
	ev := batchOf10()
	payload, _ := json.Marshal(ev)
	lambdart.BenchBatches(b, rt, payload)
}

// batchOf10 is an event of ten records: seven in the window at priorities
// 1 and 2 (replayed), three before it (parked).
func batchOf10() events.SQSEvent {
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
	return ev
}
