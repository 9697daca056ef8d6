package apirecover

import (
	"context"
	"path"
	"strings"
	"time"

	"github.com/deadletter/deadletter/internal/audit"
	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/selection"
	"github.com/deadletter/deadletter/internal/workflow/dlarecover"
)

// PlanOptions are what Plan needs beside the selection.
type PlanOptions struct {
	API               string // the Cumulus API's URL, as the plan names its database
	Archive           string // the archive, as the plan names it
	IncludeUnreadable bool
	// Now dates a failure whose object has no time, as Cumulus does
	// (today).
	Now time.Time
	// Stop and Progress are dlarecover.PlanSelection's (nil: none).
	Stop     func(selection.Result) error
	Progress func(n int)
}

// Planned is a --via-api run's plan: recover's plan of the selection (its
// keys spooled), and what Cumulus's recovery would do with it.
type Planned struct {
	*dlarecover.Plan
	// LeftOut are the objects not to be staged, and why: those whose
	// failed-sqs/ destination cannot be told, then the clashes there.
	LeftOut []LeftOut
	// Items are the execution and granules each object names, by key:
	// what the record says of each object staged and moved back.
	Items   map[string]audit.Item
	leftOut map[string]bool
}

// Plan reads the selection once, as recover's plan does, noting where
// Cumulus's recovery would copy each object that fails (the date of its
// time, today without one, and its file name) and leaving out what it
// could lose: an object whose destination cannot be told (unreadable, a
// '%' in its key, a time dla cannot date as Cumulus would) and the
// clashes there (Clashes). The caller closes the plan.
func (v *Run) Plan(ctx context.Context, scope selection.Scope, opt PlanOptions) (*Planned, error) {
	p := &Planned{Items: map[string]audit.Item{}, Plan: &dlarecover.Plan{ByDate: map[string]int{}, ByStatus: map[string]int{}, ByColl: map[string]int{},
		Database: "the Cumulus API at " + opt.API + " (Cumulus's own recovery and database)", Archive: opt.Archive, Area: string(scope.Area),
		ByFailed: map[string][]string{}}}
	var err error
	if p.Spool, err = selection.NewSpool(); err != nil {
		return nil, err
	}
	var unsure []LeftOut // left out whatever their destination
	p.CumulusFailed = func(key string, d *dla.Decoded) string {
		switch {
		case d == nil:
			unsure = append(unsure, LeftOut{Key: key, Reason: LeftOutUnreadable})
			return ""
		case strings.Contains(key, "%"):
			unsure = append(unsure, LeftOut{Key: key, Reason: LeftOutPercent})
			return ""
		}
		it := audit.Item{Execution: d.ExecutionArn, Granules: nonBlank(d.Granules)}
		if it.Execution != "" || len(it.Granules) > 0 {
			p.Items[key] = it
		}
		date, certain := dla.CumulusFailureDate(CumulusTime(d), opt.Now)
		if !certain {
			unsure = append(unsure, LeftOut{Key: key, Reason: LeftOutTime + " (" + CumulusTime(d).Raw + ")"})
			return ""
		}
		return scope.Layout.DatePrefix(dla.AreaFailed, date) + path.Base(key)
	}
	if err := dlarecover.PlanSelection(ctx, v.Store, scope, 0, opt.IncludeUnreadable, p.Plan, opt.Stop, opt.Progress); err != nil {
		p.Close()
		return nil, err
	}
	clashes, err := v.Clashes(ctx, p.ByFailed)
	if err != nil {
		p.Close()
		return nil, err
	}
	p.LeftOut = append(unsure, clashes...)
	p.leftOut = make(map[string]bool, len(p.LeftOut))
	for _, l := range p.LeftOut {
		p.leftOut[l.Key] = true
	}
	return p, nil
}

// ToStage is how many objects the run stages: the selection less what is
// left out.
func (p *Planned) ToStage() int { return p.Objects - len(p.LeftOut) }

// StageKeys yields the keys to stage, in the selection's order.
func (p *Planned) StageKeys(yield func(string) error) error {
	return p.Spool.Keys(func(k string) error {
		if p.leftOut[k] {
			return nil
		}
		return yield(k)
	})
}

// FailedTo is where Cumulus's recovery would copy each object that fails,
// by key.
func (p *Planned) FailedTo() map[string]string {
	to := map[string]string{}
	for dst, keys := range p.ByFailed {
		for _, k := range keys {
			to[k] = dst
		}
	}
	return to
}

// Close removes the plan's spool.
func (p *Planned) Close() {
	if p.Spool != nil {
		p.Spool.Close()
	}
}

// nonBlank is ids without the empty and blank ones, trimmed.
func nonBlank(ids []string) []string {
	out := ids[:0:0]
	for _, g := range ids {
		if g = strings.TrimSpace(g); g != "" {
			out = append(out, g)
		}
	}
	return out
}
