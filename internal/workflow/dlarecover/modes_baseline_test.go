package dlarecover

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/dla/gen"
	"github.com/deadletter/deadletter/internal/recovery"
	"github.com/deadletter/deadletter/internal/selection"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// runModes runs a generated archive through Run and returns the object
// lines, the summary, the tables and the keys left.
func runModes(t *testing.T, old bool, conc int, mod func(*Run), emitted func(int, context.CancelFunc)) ([]string, Summary, map[string][]map[string]any, []string, error) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fx := newRunFixture(t)
	pool, store, spool := fx.pool, fx.store, fx.spool
	fx.generate(t, gen.Options{Stack: "s", Count: 90, Seed: 41, Days: 2, MinGranules: 1, MaxGranules: 3})
	r := &Run{Store: store, Layout: dla.Layout{Stack: "s"}, DB: testsupport.CumulusDB(t, pool), Pool: pool,
		Writer:      &recovery.Writer{Now: func() time.Time { return now }, NoMsgIndex: old, Unbatched: old},
		Concurrency: conc, Now: func() time.Time { return now }, Sum: &Summary{Selected: spool.Len()}, Objects: spool, NoPrefetch: old}
	if mod != nil {
		mod(r)
	}
	var lines []string
	runErr := r.Run(ctx, selection.Scope{Layout: dla.Layout{Stack: "s"}}, func(o Object) error {
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

// TestDryRunAndKeepMatchBaseline: --dry-run and --keep through the
// new path (prefetch; the background deleter is not started) and the old
// one give the same lines, summary, tables and archive; a dry run writes
// nothing and both keep every object.
func TestDryRunAndKeepMatchBaseline(t *testing.T) {
	for _, mode := range []string{"dry-run", "keep"} {
		mod := func(r *Run) { r.DryRun, r.Keep = mode == "dry-run", mode == "keep" }
		nl, ns, nt, nleft, nerr := runModes(t, false, 1, mod, nil)
		ol, os, ot, oleft, oerr := runModes(t, true, 1, mod, nil)
		if nerr != nil || oerr != nil {
			t.Fatalf("%s: %v / %v", mode, nerr, oerr)
		}
		if !slices.Equal(nl, ol) {
			t.Errorf("%s: object lines differ", mode)
		}
		if ns != os {
			t.Errorf("%s: summaries differ:\nnew: %+v\nold: %+v", mode, ns, os)
		}
		if !slices.Equal(nleft, oleft) || len(nleft) != ns.Selected {
			t.Errorf("%s: %d objects left (new), %d (old), %d selected", mode, len(nleft), len(oleft), ns.Selected)
		}
		a, _ := json.Marshal(nt)
		b, _ := json.Marshal(ot)
		if string(a) != string(b) {
			t.Errorf("%s: tables differ", mode)
		}
		if mode == "dry-run" && len(nt["executions"]) != 0 {
			t.Errorf("a dry run wrote %d executions", len(nt["executions"]))
		}
		if mode == "keep" && (ns.Written == 0 || len(nt["executions"]) == 0) {
			t.Errorf("keep wrote nothing: %+v", ns)
		}
		if ns.Deleted != 0 || ns.Moved != 0 {
			t.Errorf("%s: %d deleted, %d moved", mode, ns.Deleted, ns.Moved)
		}
	}
}

// TestInterruptMidRunReportsWhatWasDeleted: an interrupt (the context cancelled, as
// Ctrl-C does) after ten objects, new and old paths, concurrency 1 and 8:
// every object reported deleted is gone, every other one is in place or
// in failed-sqs/, the summary's Deleted is what was deleted, and the run
// says it was interrupted.
func TestInterruptMidRunReportsWhatWasDeleted(t *testing.T) {
	defer func(n int) { deleteBatch = n }(deleteBatch)
	deleteBatch = 3
	for _, old := range []bool{false, true} {
		for _, conc := range []int{1, 8} {
			lines, sum, _, left, err := runModes(t, old, conc, nil, func(n int, cancel context.CancelFunc) {
				if n == 10 {
					cancel()
				}
			})
			if !errors.Is(err, context.Canceled) || !sum.Interrupted {
				t.Errorf("old=%v conc=%d: Run returned %v, interrupted %v", old, conc, err, sum.Interrupted)
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
						t.Errorf("old=%v conc=%d: %s reported deleted, still in place", old, conc, o.Key)
					} else {
						deleted++
					}
					if o.Result != recovery.Written && o.Result != recovery.Dropped {
						t.Errorf("old=%v conc=%d: %s deleted with result %s", old, conc, o.Key, o.Result)
					}
				case o.Action == "moved":
					if inArchive[o.Key] || !inArchive[o.MovedTo] {
						t.Errorf("old=%v conc=%d: %s reported moved to %s, not there", old, conc, o.Key, o.MovedTo)
					}
				default:
					if !inArchive[o.Key] {
						t.Errorf("old=%v conc=%d: %s (%s) gone", old, conc, o.Key, o.Action)
					}
				}
			}
			if sum.Deleted != deleted || deleted == 0 {
				t.Errorf("old=%v conc=%d: summary %d deleted, %d gone", old, conc, sum.Deleted, deleted)
			}
			if sum.NotProcessed == 0 || len(lines) >= sum.Selected {
				t.Errorf("old=%v conc=%d: the interrupt stopped nothing: %+v", old, conc, sum)
			}
			n := 0
			for _, k := range left {
				if !strings.Contains(k, "failed-sqs") {
					n++
				}
			}
			if n+deleted+sum.Moved != sum.Selected {
				t.Errorf("old=%v conc=%d: %d in place + %d deleted + %d moved != %d selected", old, conc, n, deleted, sum.Moved, sum.Selected)
			}
		}
	}
}
