package pushreplay_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/sqsmove"
	"github.com/deadletter/deadletter/internal/testsupport"
	"github.com/deadletter/deadletter/internal/workflow/dlqsession"
	"github.com/deadletter/deadletter/internal/workflow/pushreplay"
)

// The run is driven from its Options alone, without cobra or the CLI:
// planned and confirmed, or streamed under Yes, it sends each eligible
// message of the DLQ to its priority queue, releases the rest, tells each
// message's fate, ends its journal with the summary it returns, and loses
// and doubles nothing.
func TestRunReplaysADLQFromItsOptionsWithoutTheCLI(t *testing.T) {
	for _, yes := range []bool{false, true} {
		t.Run("yes="+strconv.FormatBool(yes), func(t *testing.T) {
			c := testsupport.SQSClient(t)
			dlq, base := testsupport.NewPushQueues(t, c, "run", 1, 2)
			// in is a createdAt s seconds into policy's window; want maps each
			// body to the queue it must end in.
			in := func(s int) string { return strconv.Itoa(1763109000000 + s*1000) }
			want := map[string]string{
				`{"priority":1,"createdAt":` + in(1) + `,"errorCode":1004}`:          base + "P1",
				`{"priority":1,"createdAt":` + in(2) + `,"errorCode":1004}`:          base + "P1",
				`{"priority":1,"createdAt":"2025-11-14T08:30:03Z","errorCode":1004}`: base + "P1",
				`{"priority":2,"createdAt":"` + in(4) + `","errorCode":1004}`:        base + "P2",
				`{"priority":2,"createdAt":` + in(5) + `,"errorCode":1004}`:          base + "P2",
				`{"priority":1,"createdAt":` + in(6) + `,"errorCode":2003}`:          dlq, // code not selected
				`{"priority":1,"createdAt":1763108999999,"errorCode":1004}`:          dlq, // before the window
				`{"createdAt":` + in(8) + `,"errorCode":1004}`:                       dlq, // no priority
				`not json`: dlq,
			}
			var bodies []string
			for b := range want {
				bodies = append(bodies, b)
			}
			testsupport.SendBodies(t, c, dlq, bodies, nil)

			journal := filepath.Join(t.TempDir(), "journal.ndjson")
			var plan *pushreplay.Plan
			confirmed := 0
			fates := map[sqsmove.Outcome]int{}
			run := &pushreplay.Run{
				Options: pushreplay.Options{
					Queue:   dlqsession.QueueOptions{DLQ: dlq, Visibility: 30 * time.Second, Wait: time.Second},
					BaseURL: base, Policy: policy, Yes: yes, Ineligible: "release", Concurrency: 4, Journal: journal,
				},
				Out:  dlqsession.Out{Logf: t.Logf},
				SQS:  func(context.Context) (sqsmove.API, string, error) { return c, "the test SQS", nil },
				Plan: func(p *pushreplay.Plan) { plan = p },
				Confirm: func(p *pushreplay.Plan) (bool, error) {
					confirmed++
					return p.Eligible == 5, nil
				},
				OnMessage: func(f pushreplay.Fate) {
					fates[f.Outcome]++
					if f.Outcome == sqsmove.OutcomeSent && f.Target != base+"P"+strconv.Itoa(f.Command.Priority) {
						t.Errorf("%s of priority %d sent to %s", f.MessageID, f.Command.Priority, f.Target)
					}
				},
			}
			res, err := run.Replay(context.Background())
			if err != nil || res == nil {
				t.Fatalf("run: %v", err)
			}
			s := res.Summary
			if s.Scanned != len(want) || s.Eligible != 5 || s.Sent != 5 || s.Released != 4 || s.Ineligible != 4 || res.Partial() || res.NoSummary {
				t.Errorf("summary %+v", s)
			}
			if plan == nil || plan.Eligible != 5 || plan.Missing != 0 || plan.Nothing || len(plan.ByTarget) != 2 {
				t.Errorf("plan %+v", plan)
			}
			if wantConfirm := map[bool]int{false: 1, true: 0}[yes]; confirmed != wantConfirm {
				t.Errorf("Confirm asked %d times, want %d", confirmed, wantConfirm)
			}
			if fates[sqsmove.OutcomeSent] != 5 || fates[pushreplay.OutcomeReleased] != 4 || len(fates) != 2 {
				t.Errorf("fates %v", fates)
			}
			if s.Journal == nil || *s.Journal != journal || lastJournalEvent(t, journal) != sqsmove.EvSummary {
				t.Errorf("journal %v does not end with the summary", s.Journal)
			}

			// Every body is where it belongs, once.
			seen := map[string]int{}
			for _, q := range []string{dlq, base + "P1", base + "P2"} {
				for _, m := range testsupport.Drain(t, c, q, 5*time.Second) {
					if b := *m.Body; want[b] != q {
						t.Errorf("%.60s is in %s, want %s", b, q, want[b])
					}
					seen[*m.Body]++
				}
			}
			for b := range want {
				if seen[b] != 1 {
					t.Errorf("%.60s is there %d times, want once", b, seen[b])
				}
			}
		})
	}
}

// lastJournalEvent is the event of a journal's last line.
func lastJournalEvent(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	var ev sqsmove.Event
	if err := json.Unmarshal(lines[len(lines)-1], &ev); err != nil {
		t.Fatal(err)
	}
	return ev.Event
}

// A DLQ that cannot be opened (no region, no such queue, credentials
// refused) is not a run: the error says why, and there is no summary of
// zeros claiming that nothing was scanned.
func TestRunThatCannotOpenTheDLQHasNoSummary(t *testing.T) {
	run := &pushreplay.Run{
		Options: pushreplay.Options{
			Queue:   dlqsession.QueueOptions{DLQ: "https://sqs.us-east-1.amazonaws.com/123456789012/dlq", Visibility: 30 * time.Second, Wait: time.Second},
			BaseURL: "https://sqs.us-east-1.amazonaws.com/123456789012/push", Policy: policy, Yes: true, Ineligible: "release", Concurrency: 4,
			Journal: filepath.Join(t.TempDir(), "journal.ndjson"),
		},
		Out: dlqsession.Out{Logf: t.Logf},
		SQS: func(context.Context) (sqsmove.API, string, error) {
			return nil, "", errors.New("no AWS region: pass --region, set AWS_REGION, or set one in the profile")
		},
	}
	res, err := run.Replay(context.Background())
	if err == nil {
		t.Fatal("the run went on without a DLQ")
	}
	if res != nil && !res.NoSummary {
		t.Fatalf("a run that never opened its DLQ has a summary: %+v", res.Summary)
	}
}
