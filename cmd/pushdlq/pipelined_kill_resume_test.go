package main_test

import (
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/testsupport"
)

// --concurrency 2, so a batch's delete goes out with the next
// batch's send. Both hang (the sends after they reached SQS; the deletes
// before they reach it, or after), and the run is killed (SIGKILL) with a
// pipelined delete and a send in flight together. The resume must finish
// with every message in exactly one place, except the messages of the
// sends in flight, which the journal has uncertain and may be in two; none
// that the journal has sent is sent again.
func TestResumeAfterKillWithPipelinedDeleteAndSendInFlight(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name          string
		deleteReaches bool // the hung delete took effect on SQS
	}{
		{"delete not yet at SQS", false},
		{"delete done at SQS, reply hung", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := seededWorld(t, 240)
			proxy := w.hangProxy()
			var mu sync.Mutex
			calls := map[string]int{}
			sendStuck, delStuck := make(chan struct{}), make(chan struct{})
			var sendOnce, delOnce sync.Once
			block := func(op string) {
				mu.Lock()
				calls[op]++
				n := calls[op]
				mu.Unlock()
				switch {
				case op == "SendMessageBatch" && n < 5:
					// Slow sends: the scan gets ahead, so batches wait for
					// the workers and each delete goes with the next send.
					time.Sleep(300 * time.Millisecond)
				case op == "SendMessageBatch" && n >= 5: // two canaries, two batches, then hang
					sendOnce.Do(func() { close(sendStuck) })
					proxy.hang()
				case op == "DeleteMessageBatch" && n >= 3:
					delOnce.Do(func() { close(delStuck) })
					proxy.hang()
				}
			}
			proxy.SetAfter(func(op string, req, resp []byte) []byte {
				if op == "SendMessageBatch" || (op == "DeleteMessageBatch" && tc.deleteReaches) {
					block(op)
				}
				return resp
			})
			if !tc.deleteReaches {
				proxy.SetHook(func(op string, body []byte) ([]byte, *testsupport.Reply) {
					if op == "DeleteMessageBatch" {
						block(op)
					}
					return nil, nil
				})
			}
			journal := filepath.Join(t.TempDir(), "journal.ndjson")
			args := append(w.replayArgs("--yes", "--journal", journal, "--concurrency", "2", "--visibility-timeout", "3s", "-o", "json"), "--endpoint-url", proxy.URL)
			testsupport.StartProc(t, w.command(t.TempDir(), args...)).KillWhen(t, 60*time.Second, "the run never had a send and a delete in flight together", sendStuck, delStuck)

			stdout, uncertain := w.resumeAfterKill(journal)
			if len(uncertain) == 0 {
				t.Errorf("the journal has no send in flight, though one hung when the run was killed")
			}
			if tc.deleteReaches && gjson.Get(stdout, "skipped_duplicates").Int() != 0 {
				// Those the hung delete removed are gone from the DLQ: nothing to skip for them.
				t.Logf("skipped %d", gjson.Get(stdout, "skipped_duplicates").Int())
			}
			if !tc.deleteReaches && gjson.Get(stdout, "skipped_duplicates").Int() == 0 {
				t.Errorf("the resume skipped nothing, but the killed run's pipelined delete never reached SQS: %s", stdout)
			}
			w.exactlyOnce(w.places(1, 2), eligible, w.bodiesOf(uncertain))
		})
	}
}
