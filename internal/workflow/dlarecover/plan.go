package dlarecover

import (
	"context"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/selection"
)

// Plan is what a selection holds, before anything is written: recover's
// plan, and the spool of what the run will take.
type Plan struct {
	Objects    int `json:"objects"`
	Unreadable int `json:"unreadable"`
	// LeftAlone counts unreadable objects not selected: a content filter
	// cannot tell whether they match, so recover does not touch them.
	LeftAlone   int              `json:"unreadable_left_alone"`
	ByDate      map[string]int   `json:"by_date"`
	ByStatus    map[string]int   `json:"by_status"`
	ByColl      map[string]int   `json:"by_collection"`
	Describe    int              `json:"describe_execution_calls"`
	History     int              `json:"execution_history_reads"`
	Database    string           `json:"database"`
	Schema      string           `json:"schema"`
	Archive     string           `json:"archive"`
	Area        string           `json:"area"`
	Spool       *selection.Spool `json:"-"` // the keys (via-api's plan)
	ObjectSpool *ObjectSpool     `json:"-"` // the decoded objects (recover's plan); nil: Spool
	// CumulusFailed, with --via-api, is where Cumulus's recovery would
	// put an object that fails ("" when it would leave it: unreadable);
	// ByFailed gathers the keys by that destination.
	CumulusFailed func(key string, d *dla.Decoded) string `json:"-"`
	ByFailed      map[string][]string                     `json:"-"`
}

// Add counts one object of the selection and spools it.
func (p *Plan) Add(key string, d *dla.Decoded, err error) error {
	p.Objects++
	if p.ObjectSpool != nil {
		if err := p.ObjectSpool.Add(key, d, err); err != nil {
			return err
		}
	} else if err := p.Spool.Add(key); err != nil {
		return err
	}
	if p.CumulusFailed != nil {
		if dst := p.CumulusFailed(key, d); dst != "" {
			p.ByFailed[dst] = append(p.ByFailed[dst], key)
		}
	}
	if d == nil {
		p.Unreadable++
		return nil
	}
	p.ByDate[d.Date()]++
	p.ByStatus[orDash(d.Status)]++
	p.ByColl[orDash(d.CollectionID)]++
	if len(d.Granules) > 0 && d.ExecutionArn != "" {
		p.Describe++
	}
	switch d.Status {
	case "FAILED", "ABORTED", "TIMED_OUT", "":
		if d.Detail != "" {
			p.History++
		}
	}
	return nil
}

// PlanSelection is the plan pass: one pass over the selection, counting
// and spooling what the run will take. An unreadable object is left alone
// (counted in LeftAlone) when a content filter cannot tell whether it
// matches, or a date selection cannot date it, unless includeUnreadable.
// stop, called with each result first, ends the pass with its error (an
// AWS credentials error every other object would hit too); progress is
// told how many objects were planned. Either may be nil. reads is how
// many objects are read at once (PlanReads).
func PlanSelection(ctx context.Context, store archive.Store, scope selection.Scope, reads int, includeUnreadable bool, plan *Plan,
	stop func(selection.Result) error, progress func(n int)) error {
	if reads <= 0 {
		reads = planReads
	}
	if stop == nil {
		stop = func(selection.Result) error { return nil }
	}
	if progress == nil {
		progress = func(int) {}
	}
	_, err := selection.Run(ctx, store, scope, reads, func(r selection.Result) error {
		if err := stop(r); err != nil {
			return err
		}
		if r.Unreadable() && !includeUnreadable && (scope.Filter.ByContent() || undatable(scope, r.Entry.Key)) {
			plan.LeftAlone++
			return nil
		}
		if r.Unreadable() && (r.Decoded == nil || len(r.Decoded.Layers) == 0) {
			return plan.Add(r.Entry.Key, nil, r.Err)
		}
		progress(plan.Objects + 1)
		return plan.Add(r.Entry.Key, r.Decoded, r.Err)
	})
	return err
}

// planReads and maxPlanReads bound how many objects the plan pass reads
// at once.
const (
	planReads    = 16
	maxPlanReads = 64
)

// PlanReads is how many objects the plan pass of a run of concurrency
// reads at once: twice as many as the run writes, from 16 to 64. With a
// store a round trip away the pass is a line of reads: 1,800 objects 20 ms
// away took 1.47 s at 32, 1.00 s at 64 (docs/performance.md), before the
// first write. The selection holds at most five times this many objects,
// and at most 64 MiB of them by their listed sizes (selection.Run), so
// however high the run's concurrency, an archive of large objects is not
// held many times over.
func PlanReads(concurrency int) int { return min(max(planReads, 2*concurrency), maxPlanReads) }

// undatable: with a date selection, an object outside the date folders (a
// legacy flat key) that cannot be decoded has no date to select it by.
func undatable(scope selection.Scope, key string) bool {
	return (scope.Filter.From != "" || scope.Filter.To != "") && scope.Layout.ParseKey(key).Date == ""
}

// orDash is "-" for an empty value (a plan's count of objects without a
// status or a collection).
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
