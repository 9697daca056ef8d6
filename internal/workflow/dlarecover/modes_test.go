package dlarecover

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/dla/gen"
	"github.com/deadletter/deadletter/internal/recovery"
	"github.com/deadletter/deadletter/internal/selection"
	"github.com/deadletter/deadletter/internal/testsupport"
	"github.com/deadletter/deadletter/internal/testsupport/golden"
)

// runModes runs a generated archive through Run and returns the object
// lines, the summary, the tables and the keys left.
func runModes(t *testing.T, conc int, mod func(*recoverRun), emitted func(int, context.CancelFunc)) ([]string, Summary, map[string][]map[string]any, []string, error) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fx := newRunFixture(t)
	pool, store, spool := fx.pool, fx.store, fx.spool
	fx.generate(t, gen.Options{Stack: "s", Count: 90, Seed: 41, Days: 2, MinGranules: 1, MaxGranules: 3})
	r := &recoverRun{Store: store, Layout: dla.Layout{Stack: "s"}, DB: testsupport.CumulusDB(t, pool), Pool: pool,
		Writer:      &recovery.Writer{Now: func() time.Time { return now }},
		Concurrency: conc, Now: func() time.Time { return now }, Sum: &Summary{Selected: spool.Len()}, Objects: spool}
	if mod != nil {
		mod(r)
	}
	var lines []string
	runErr := r.runScope(ctx, selection.Scope{Layout: dla.Layout{Stack: "s"}}, func(o Object) error {
		b, err := json.Marshal(o)
		lines = append(lines, string(b))
		if emitted != nil {
			emitted(len(lines), cancel)
		}
		return err
	})
	sum := *r.Sum
	sum.Seconds = 0
	tables := fx.tables(t)
	left := fx.left()
	return lines, sum, tables, left, runErr
}

// TestDryRunAndKeepMatchConcurrencyOne: --dry-run and --keep at
// concurrency 1 and at dla recover's default (messages prepared ahead; the
// background deleter is not started) give the lines, summary, tables and
// archive of testdata/<mode>.golden.gz, which the concurrency-1 run writes
// with -update; a dry run writes nothing and both keep every object.
func TestDryRunAndKeepMatchConcurrencyOne(t *testing.T) {
	for _, mode := range []string{"dry-run", "keep"} {
		mod := func(r *recoverRun) { r.DryRun, r.Keep = mode == "dry-run", mode == "keep" }
		path := "testdata/" + mode + ".golden.gz"
		for _, conc := range []int{1, concurrent} {
			lines, sum, tables, left, err := runModes(t, conc, mod, nil)
			if err != nil {
				t.Fatalf("%s at %d: %v", mode, conc, err)
			}
			if len(left) != sum.Selected {
				t.Errorf("%s at %d: %d objects left, %d selected", mode, conc, len(left), sum.Selected)
			}
			if mode == "dry-run" && len(tables["executions"]) != 0 {
				t.Errorf("a dry run at %d wrote %d executions", conc, len(tables["executions"]))
			}
			if mode == "keep" && (sum.Written == 0 || len(tables["executions"]) == 0) {
				t.Errorf("keep at %d wrote nothing: %+v", conc, sum)
			}
			if sum.Deleted != 0 || sum.Moved != 0 {
				t.Errorf("%s at %d: %d deleted, %d moved", mode, conc, sum.Deleted, sum.Moved)
			}
			if got := goldenText(t, lines, sum, left, tables); conc == 1 {
				golden.Check(t, path, got)
			} else {
				golden.Match(t, path, got)
			}
		}
	}
}

// TestInterruptMidRunReportsWhatWasDeleted: an interrupt (the context cancelled, as
// Ctrl-C does) after ten objects, at concurrency 1 and 8:
// every object reported deleted is gone, every other one is in place or
// in failed-sqs/, the summary's Deleted is what was deleted, and the run
// says it was interrupted.
func TestInterruptMidRunReportsWhatWasDeleted(t *testing.T) {
	defer func(n int) { deleteBatch = n }(deleteBatch)
	deleteBatch = 3
	for _, conc := range []int{1, 8} {
		lines, sum, _, left, err := runModes(t, conc, nil, func(n int, cancel context.CancelFunc) {
			if n == 10 {
				cancel()
			}
		})
		if !errors.Is(err, context.Canceled) || !sum.Interrupted {
			t.Errorf("conc=%d: Run returned %v, interrupted %v", conc, err, sum.Interrupted)
		}
		inArchive := map[string]bool{}
		for _, k := range left {
			inArchive[k] = true
		}
		deleted := 0
		for _, l := range lines {
			var o Object
			if err := json.Unmarshal([]byte(l), &o); err != nil {
				t.Fatal(err)
			}
			switch {
			case o.Action == "deleted":
				if inArchive[o.Key] {
					t.Errorf("conc=%d: %s reported deleted, still in place", conc, o.Key)
				} else {
					deleted++
				}
				if o.Result != recovery.Written && o.Result != recovery.Dropped {
					t.Errorf("conc=%d: %s deleted with result %s", conc, o.Key, o.Result)
				}
			case o.Action == "moved":
				if inArchive[o.Key] || !inArchive[o.MovedTo] {
					t.Errorf("conc=%d: %s reported moved to %s, not there", conc, o.Key, o.MovedTo)
				}
			default:
				if !inArchive[o.Key] {
					t.Errorf("conc=%d: %s (%s) gone", conc, o.Key, o.Action)
				}
			}
		}
		if sum.Deleted != deleted || deleted == 0 {
			t.Errorf("conc=%d: summary %d deleted, %d gone", conc, sum.Deleted, deleted)
		}
		if sum.NotProcessed == 0 || len(lines) >= sum.Selected {
			t.Errorf("conc=%d: the interrupt stopped nothing: %+v", conc, sum)
		}
		n := 0
		for _, k := range left {
			if !strings.Contains(k, "failed-sqs") {
				n++
			}
		}
		if n+deleted+sum.Moved != sum.Selected {
			t.Errorf("conc=%d: %d in place + %d deleted + %d moved != %d selected", conc, n, deleted, sum.Moved, sum.Selected)
		}
	}
}
