package pushreplay_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/deadletter/deadletter/internal/pushpolicy"
	"github.com/deadletter/deadletter/internal/sqsmove"
	"github.com/deadletter/deadletter/internal/testsupport"
	"github.com/deadletter/deadletter/internal/workflow/pushreplay"
)

var policy = pushpolicy.Policy{Start: 1763109000000, End: 1763110800000, Codes: []int{1004}}

func TestDecideRoutesEligibleToTheirPriorityAndParksTheRest(t *testing.T) {
	for body, want := range map[string]sqsmove.Route{
		`{"priority":2,"createdAt":1763109000000,"errorCode":1004}`: {Target: "b-P2"},
		`{"priority":2,"createdAt":1763109000000,"errorCode":2003}`: {Park: true, Delay: 900},
		`{"priority":2,"createdAt":1763108999999,"errorCode":1004}`: {Park: true, Delay: 900},
		`not json`: {Park: true, Delay: 900},
	} {
		st := pushreplay.Decide(body, policy, "b-")
		if st.Route != want || st.Decision != pushpolicy.Decide(pushpolicy.ParseCommand(body), policy, "b-") {
			t.Errorf("%s: %+v", body, st)
		}
	}
}

// An eligible message whose target is the DLQ itself (a wrong base URL)
// is parked with the delay, never sent straight back without one.
func TestProcessNeverSendsToTheDLQWithoutADelay(t *testing.T) {
	c := testsupport.SQSClient(t)
	prefix := "pr" + testsupport.RandomHex(3) + "-"
	dlq := testsupport.CreateQueue(t, c, prefix+"P1", nil)
	cfg := pushpolicy.Config{DLQURL: dlq, BaseURL: strings.TrimSuffix(dlq, "P1"), Policy: policy}
	m := &sqsmove.Message{MessageID: "m1", Body: `{"priority":1,"createdAt":1763109000000,"errorCode":1004}`}
	res := pushreplay.Process(context.Background(), c, cfg, []*sqsmove.Message{m})
	if r := res[0]; !r.Step.Decision.Eligible || r.Outcome != sqsmove.OutcomeParked || r.Queue != dlq || !errors.Is(r.Err, pushreplay.ErrTargetIsDLQ) || r.Retry() || !r.Step.Route.Park {
		t.Fatalf("%+v", r)
	}
	if testsupport.QueueEmpty(t, c, dlq) {
		t.Fatal("nothing was parked")
	}
	if got := testsupport.Drain(t, c, dlq, 0); len(got) != 0 {
		t.Errorf("%d messages visible at once in the DLQ: sent without the delay", len(got))
	}
}
