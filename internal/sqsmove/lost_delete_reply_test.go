package sqsmove_test

import (
	"context"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/sqsmove"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// The reply of the first DeleteMessageBatch is lost (the delete
// took effect on the server). The docs say failed deletes are retried and
// that deleting twice is harmless; the message is sent and gone from the
// DLQ, so it must not be reported as delete_failed (which tells the
// operator it is in both places and makes the run exit 3).
func TestLostDeleteReplyIsNotDeleteFailed(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 30, false)
	drop := testsupport.NewDropReplyProxy(t, testsupport.SQSEndpoint(t), func(op string, nth int, _ []byte) bool {
		return op == "DeleteMessageBatch" && nth == 1
	})
	api := testsupport.SQSClientAt(drop.URL)
	hold := f.holdAll(api, 60*time.Second, nil)
	var bad []sqsmove.Result
	counts, err := f.replay(context.Background(), hold, func(r *sqsmove.Replayer) {
		r.API, r.Concurrency = api, 1
		r.OnResult = func(res sqsmove.Result) {
			if res.DeleteFailed != nil {
				bad = append(bad, res)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	f.release(hold)
	if drop.Dropped("DeleteMessageBatch") != 1 {
		t.Fatalf("no delete reply was dropped")
	}
	for _, res := range bad {
		t.Errorf("%s reported delete failed: %v", res.Msg.Body, res.DeleteFailed)
	}
	if counts.DeleteFailed != 0 || counts.Sent != 20 {
		t.Errorf("counts %+v, want 20 sent, 0 delete failed", counts)
	}
	f.wantEachOnce(nil)
}
