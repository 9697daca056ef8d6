package dlarecover

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/dla/gen"
	"github.com/deadletter/deadletter/internal/recovery"
	"github.com/deadletter/deadletter/internal/selection"
	"github.com/deadletter/deadletter/internal/testsupport"
	"github.com/deadletter/deadletter/internal/testsupport/golden"
)

// TestPrefetchMatchesGolden runs a generated archive (every generation and
// status, malformed objects among them, 1 to 4 granules per message)
// through Run at concurrency 1 into a fresh database, with deletes batched
// by 7 so that many batches go through the background deleter, the
// messages prepared ahead. The object lines (in order), the summary, the
// tables and what is left in the archive must be those of
// testdata/prefetch.golden.gz, written (-update) when the run that
// prepared and deleted each object in its worker gave the same.
func TestPrefetchMatchesGolden(t *testing.T) {
	defer func(n int) { deleteBatch = n }(deleteBatch)
	deleteBatch = 7
	pre := prefetchRun(t, nil)
	if pre.sum.Deleted < 10*deleteBatch || pre.sum.Failed == 0 && pre.sum.Unreadable == 0 {
		t.Fatalf("the archive does not exercise the deletes and the moves: %+v", pre.sum)
	}
	unwrapFailed := 0
	for _, l := range pre.lines {
		if strings.Contains(l, "0-unwrap-") && strings.Contains(l, "not a writable Cumulus message") {
			unwrapFailed++
		}
	}
	if unwrapFailed != len(unwrapFailures) {
		t.Fatalf("%d of the %d objects without a writable message were reported as such", unwrapFailed, len(unwrapFailures))
	}
	golden.Check(t, "testdata/prefetch.golden.gz", pre.text(t))
}

// unwrapFailures decode, but Unwrap finds no writable Cumulus message in
// them (an array where the message belongs, a missing input, a message held
// in S3 with no S3 reader).
var unwrapFailures = []string{
	`{"version":"0","detail-type":"Step Functions Execution Status Change","source":"aws.states","detail":{"status":"SUCCEEDED","output":"[1,2]"}}`,
	`{"version":"0","detail-type":"Step Functions Execution Status Change","source":"aws.states","detail":{"status":"RUNNING"}}`,
	`{"version":"0","detail-type":"Step Functions Execution Status Change","source":"aws.states","detail":{"status":"FAILED","input":"[1]"}}`,
	`{"version":"0","detail-type":"Step Functions Execution Status Change","source":"aws.states","detail":{"status":"FAILED","input":"{\"cumulus_meta\":{},\"replace\":{\"Bucket\":\"b\",\"Key\":\"k\"}}"}}`,
}

// slowSFN answers DescribeExecution after a delay, with dates derived from
// the ARN, and counts the calls in flight at once. Histories are empty.
type slowSFN struct {
	mu             sync.Mutex
	inFlight, most int
	calls          int
}

func (f *slowSFN) DescribeExecution(ctx context.Context, arn string) (recovery.ExecutionDescription, error) {
	f.mu.Lock()
	f.calls++
	f.inFlight++
	f.most = max(f.most, f.inFlight)
	f.mu.Unlock()
	time.Sleep(5 * time.Millisecond)
	f.mu.Lock()
	f.inFlight--
	f.mu.Unlock()
	start := time.Date(2024, 3, 1, 0, 0, len(arn)%60, 0, time.UTC)
	return recovery.ExecutionDescription{StartDate: start, StopDate: start.Add(time.Duration(len(arn)) * time.Second)}, nil
}

func (f *slowSFN) GetExecutionHistory(context.Context, string) ([]recovery.HistoryEvent, error) {
	return nil, nil
}

// With Step Functions reads on, messages are prepared ahead at concurrency
// 1 too, several at once, so that the reads of the next messages overlap
// one another and the write of this one; the results and the reads are
// those of testdata/prefetch_sfn.golden.gz, written (-update) when the run
// that read each message's execution in its worker, one after another,
// gave the same.
func TestPrefetchOverlapsTheNextMessagesReadsAndChangesNoResult(t *testing.T) {
	fast := &slowSFN{}
	pre := prefetchRun(t, fast)
	if fast.calls == 0 {
		t.Fatal("no DescribeExecution call")
	}
	if fast.most < 2 {
		t.Errorf("DescribeExecution calls in flight at once: %d (want 2 or more)", fast.most)
	}
	golden.Check(t, "testdata/prefetch_sfn.golden.gz", fmt.Sprintf("# DescribeExecution calls: %d\n", fast.calls)+pre.text(t))
}

// prefetchRun runs a generated archive (every generation and status,
// malformed objects, 1 to 4 granules per message, objects Unwrap rejects)
// through Run at concurrency 1 into a fresh database, with sfn as the Step
// Functions reader (nil: none), and returns its object lines, summary,
// tables and what is left in the archive.
func prefetchRun(t *testing.T, sfn recovery.StepFunctions) outcome {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	fx := newRunFixture(t)
	pool, store, spool := fx.pool, fx.store, fx.spool
	firstDay := ""
	err := gen.Generate(gen.Options{Stack: "s", Count: 150, Seed: 5, Days: 3, MinGranules: 1, MaxGranules: 4},
		func(o gen.Object) error {
			if info := (dla.Layout{Stack: "s"}).ParseKey(o.Key); firstDay == "" && info.Area == dla.AreaSQS && info.Date != "" {
				firstDay = info.Date
			}
			fx.put(t, o.Key, o.Body)
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	// Objects that decode but hold no writable message: Unwrap fails
	// for them where the message is prepared ahead, and each must be
	// reported (failed-sqs/).
	for i, body := range unwrapFailures {
		key := fmt.Sprintf("%s0-unwrap-%d.json", (dla.Layout{Stack: "s"}).DatePrefix(dla.AreaSQS, firstDay), i)
		fx.put(t, key, []byte(body))
	}
	r := &recoverRun{Store: store, Layout: dla.Layout{Stack: "s"}, DB: testsupport.CumulusDB(t, pool), Pool: pool,
		Writer: &recovery.Writer{Now: func() time.Time { return now }, SFN: sfn}, Concurrency: 1,
		Now: func() time.Time { return now }, Sum: &Summary{Selected: spool.Len()}, Objects: spool}
	return fx.outcome(t, r, selection.Scope{Layout: dla.Layout{Stack: "s"}})
}
