package sqsmove_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/deadletter/deadletter/internal/sqsmove"
)

// A run stopped early (SIGTERM, a closed stdout) reports every message it
// would have sent and did not as abandoned, also those never handed to a
// worker: sent + failed + uncertain + abandoned adds up to the eligible.
func TestStoppedRunCountsEveryUnsentMessageAsAbandoned(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 150, false) // 100 routed to P1 or P2
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	counts, results, err := f.run(ctx, func(r *sqsmove.Replayer) {
		r.Rate, r.Concurrency = 10, 1
		inner := r.OnResult
		// OnResult is called from the workers and from Run's own
		// goroutine (abandoned messages never handed to a worker) at once.
		var n atomic.Int32
		r.OnResult = func(res sqsmove.Result) {
			if n.Add(1) == 3 { // the two canaries and one message of the first batch
				cancel()
			}
			inner(res)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if counts.Abandoned == 0 || counts.Sent+counts.Failed+counts.Uncertain+counts.Abandoned != 100 || len(results) != 100 {
		t.Errorf("counts %+v, %d results: want every one of the 100 routed messages accounted for", counts, len(results))
	}
	f.wantEachOnce(func(b string) bool {
		for _, r := range results {
			if r.Msg.Body == b {
				return r.Outcome != sqsmove.OutcomeSent
			}
		}
		return true
	})
}
