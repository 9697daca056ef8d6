package sqsmove_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/deadletter/deadletter/internal/sqsmove"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// An entry the server failed through no fault of the sender is retried;
// the retry reaches SQS (the message is in the target) but its reply lists
// the entry nowhere. Send must call it uncertain (it may be there: a
// possible duplicate), not failed (it is not there). Before, the failure
// of the first attempt stuck to it, and the push-dlq processor logged a
// message that was in its priority queue as failed, with no
// possible_duplicate mark.
func TestRetriedEntryMissingFromTheReplyIsUncertain(t *testing.T) {
	f := newFixture(t, 0, false)
	var calls atomic.Int32
	f.proxy.SetHook(func(op string, b []byte) ([]byte, *testsupport.Reply) {
		if op == "SendMessageBatch" && calls.Add(1) == 1 {
			out, _ := json.Marshal(map[string]any{"Successful": []any{},
				"Failed": []any{map[string]any{"Id": "0", "Code": "InternalError", "SenderFault": false, "Message": "try again (test)"}}})
			return nil, &testsupport.Reply{Status: 200, Body: string(out)}
		}
		return nil, nil
	})
	f.proxy.SetAfter(func(op string, _, resp []byte) []byte {
		if op == "SendMessageBatch" && calls.Load() == 2 {
			return []byte(`{"Successful":[],"Failed":[]}`) // the retry took effect; its reply names nothing
		}
		return resp
	})
	msg := &sqsmove.Message{MessageID: "m-1", Body: `{"n":1}`}
	out := sqsmove.Send(context.Background(), f.api, []sqsmove.Item{{Msg: msg, Queue: f.target("P1"), Route: sqsmove.Route{Target: f.target("P1")}}}, 1)
	got := testsupport.Drain(t, f.c, f.target("P1"), 2*time.Second)
	if len(got) != 1 || aws.ToString(got[0].Body) != msg.Body || calls.Load() != 2 {
		t.Fatalf("P1 holds %d messages after %d calls, want the retried one", len(got), calls.Load())
	}
	if out[0].Outcome != sqsmove.OutcomeUncertain {
		t.Errorf("outcome %s (%v), want uncertain: the message is in the target", out[0].Outcome, out[0].Err)
	}
}
