package pushdlqcmd

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/cli/iostreams"
	"github.com/deadletter/deadletter/internal/sqsmove"
	"github.com/deadletter/deadletter/internal/testsupport"
	"github.com/deadletter/deadletter/internal/workflow/pushreplay"
)

// runCtx is run without a terminal, under ctx (cancelled: Ctrl-C).
func (w *limitWorld) runCtx(ctx context.Context, args ...string) (code int, stdout, stderr string) {
	ios, _, out, errOut := iostreams.Test()
	f := NewFactory(ios, func(string) string { return "" })
	f.SQS = func(context.Context) (sqsmove.API, string, error) {
		return testsupport.SQSClientAt(w.faults.URL), "SQS via a limit proxy", nil
	}
	code = Run(ctx, f, append(args, "--visibility-timeout", "30s"))
	return code, out.String(), errOut.String()
}

// A park run counts a park that did not happen (its send failed or got
// no reply, or the run stopped before it) as not_parked, never as failed,
// uncertain, abandoned or hold_lost, which count eligible messages: over
// the rounds sent + failed + uncertain + hold_lost + abandoned = eligible
// and parked + not_parked = ineligible, and the run exits non-zero. Here
// the reply of the second round's first park is lost (the DLQ is then not
// proven as a park target, so the round's other parks fail), or the run
// is interrupted at the second round's first send. Every message is in its
// target or the DLQ once, apart from a park whose reply was lost (maybe
// twice in the DLQ, listed as a possible duplicate).
func TestParkRunCountsParksThatDidNotHappenAsNotParked(t *testing.T) {
	const n, limit = 90, 25
	for _, tc := range []struct {
		name string
		code int
	}{{"park reply lost in round 2", 3}, {"interrupted in round 2", 130}} {
		t.Run(tc.name, func(t *testing.T) {
			w := newLimitWorld(t, n, limit, 3)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var mu sync.Mutex
			deletes, round2, lost := 0, false, 0
			isSend := func(op string) bool { return op == "SendMessageBatch" || op == "SendMessage" }
			w.faults.SetHook(func(op string, _ []byte) ([]byte, *testsupport.Reply) {
				mu.Lock()
				defer mu.Unlock()
				switch {
				case op == "ReceiveMessage" && deletes > 0:
					round2 = true // round 1's messages were deleted: reading on
				case op == "DeleteMessageBatch":
					deletes++
				case round2 && isSend(op) && tc.code == 130:
					cancel()
				}
				return nil, nil
			})
			if tc.code == 3 {
				w.faults.SetLoseReplyOf(func(op string, body []byte) bool {
					mu.Lock()
					defer mu.Unlock()
					var in struct{ QueueUrl string }
					if round2 && isSend(op) && lost == 0 && json.Unmarshal(body, &in) == nil && in.QueueUrl == w.dlq {
						lost++
						return true
					}
					return false
				})
			}
			code, out, stderr := w.runCtx(ctx, w.replayArgs("--ineligible", "park", "--yes", "-o", "json")...)
			var sum pushreplay.Summary
			if code != tc.code || json.Unmarshal([]byte(out), &sum) != nil {
				t.Fatalf("exit %d, want %d:\n%s\n%s", code, tc.code, out, stderr)
			}
			if !round2 || (tc.code == 3 && lost != 1) {
				t.Fatalf("the run did not read on into a second round (lost %d):\n%s", lost, stderr)
			}
			checkAddsUp(t, sum)
			if sum.NotParked == 0 || sum.Parked+sum.NotParked != sum.Ineligible || len(sum.HoldLostIDs) != sum.HoldLost {
				t.Errorf("summary %+v: want the parks that did not happen counted not_parked, parked + not_parked = ineligible", sum)
			}
			if tc.code == 3 && (sum.PossibleDuplicates != 1 || !strings.Contains(stderr, "not reading on past SQS's in-flight limit")) {
				t.Errorf("summary %+v: want the lost park listed, and no reading on:\n%s", sum, stderr)
			}
			places := w.places("")
			for b, eligible := range w.bodies {
				at := places[b]
				slices.Sort(at)
				switch strings.Join(at, " ") {
				case "P1":
					if !eligible {
						t.Errorf("an ineligible message was sent: %.80s", b)
					}
				case "delayed", "dlq":
				case "delayed dlq": // the park whose reply was lost
					if tc.code != 3 || eligible {
						t.Errorf("a message is in %v: %.80s", at, b)
					}
				default:
					t.Errorf("a message (eligible %v) is in %v: %.80s", eligible, at, b)
				}
			}
		})
	}
}

// Two park replays at once on one DLQ, which keeps receiving messages
// while they read on past the in-flight limit (each run's limit met partly
// by the other's messages): each message is sent or parked by one of them,
// once; each summary adds up, and the two account for every message.
func TestTwoParkReplaysAtOnceOnAGrowingDLQLoseAndDoubleNothing(t *testing.T) {
	const n, limit, late = 90, 25, 30
	w := newLimitWorld(t, n, limit, 3)
	c := testsupport.SQSClient(t)
	var lateBodies []string
	for i := range late {
		code := map[bool]string{true: "1005", false: "1004"}[i%3 == 0]
		lateBodies = append(lateBodies, `{"action":"push","priority":1,"createdAt":`+strconv.FormatInt(1763107200000+int64(i)*1000, 10)+`,"errorCode":`+code+`,"errorMessage":"late","late":`+strconv.Itoa(i)+`}`)
		w.bodies[lateBodies[i]] = code == "1004"
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the producer
		defer wg.Done()
		for _, b := range lateBodies {
			time.Sleep(50 * time.Millisecond)
			testsupport.SendBodies(t, c, w.dlq, []string{b}, nil)
		}
	}()
	var sums [2]pushreplay.Summary
	for k := range sums {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, out, stderr := w.runCtx(context.Background(), w.replayArgs("--ineligible", "park", "--yes", "-o", "json")...)
			if json.Unmarshal([]byte(out), &sums[k]) != nil || code != 0 && code != 3 {
				t.Errorf("run %d: exit %d:\n%s\n%s", k, code, out, stderr)
			}
		}()
	}
	wg.Wait()
	moved := 0
	for _, s := range sums {
		checkAddsUp(t, s)
		moved += s.Sent + s.Parked
	}
	places := w.places("")
	isLate := map[string]bool{}
	for _, b := range lateBodies {
		isLate[b] = true
	}
	left := 0 // sent after both runs read the DLQ to its end
	for b, eligible := range w.bodies {
		at := places[b]
		if len(at) == 1 && at[0] == "dlq" && isLate[b] {
			left++
			continue
		}
		if len(at) != 1 || (at[0] == "P1") != eligible || at[0] == "dlq" {
			t.Errorf("a message (eligible %v) is in %v, want sent or parked once: %.80s", eligible, at, b)
		}
	}
	if moved != n+late-left {
		t.Errorf("the runs sent or parked %d, want %d: %+v", moved, n+late-left, sums)
	}
}
