package autorecover

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/deadletter/deadletter/internal/audit"
	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/selection"
	"github.com/deadletter/deadletter/internal/workflow/dlarecover"
)

// errBudget stops a group's recover when the pass's time is short: no new
// object is taken, those in flight finish.
var errBudget = errors.New("the pass's deadline is near")

// begin writes the pass's record, before anything changes: in recover
// mode, and in report mode too (it changes nothing, but its state is the
// next pass's backoff and the last notification). A dry run records
// nothing.
func (p *pass) begin(ctx context.Context) error {
	if p.c.DryRun || p.c.NoAudit {
		return nil
	}
	s := p.c.Started
	s.Tool, s.Verb = cmp.Or(s.Tool, "dla"), Verb
	s.Reason = cmp.Or(s.Reason, "autorecover")
	s.Target = audit.Target{Archive: p.c.Location.String(), Database: p.c.Database}
	s.Selection = map[string]any{"mode": p.c.Mode, "lookback_days": p.c.Lookback, "from": p.rep.From, "to": p.rep.To,
		"max_objects": p.c.MaxObjects, "max_attempts": p.c.MaxAttempts, "probe": p.c.Probe}
	plan := map[string]int{"objects": p.rep.Objects, "groups": len(p.choices)}
	for _, g := range p.rep.Groups {
		plan[string(g.Decision)]++
		if g.Probe != nil {
			plan["probe_"+string(g.Probe.Outcome)]++
		}
	}
	s.Plan = plan
	rec, err := audit.Begin(ctx, p.c.Store, p.c.Layout.AuditPrefix(), s, audit.Options{Now: p.c.Now, Warnf: p.c.Warnf})
	if err != nil {
		return err
	}
	p.rec = rec
	p.rep.Audit = rec.Where()
	return nil
}

// recover runs recover on each group whose probe writes, in triage's
// order, within the budgets: MaxObjects objects, and none taken once the
// deadline is near.
func (p *pass) recover(ctx context.Context) error {
	if p.c.Mode != ModeRecover || p.c.DryRun {
		return nil
	}
	if p.c.Athena != nil {
		if err := p.athenaKeys(ctx); err != nil {
			return err
		}
	}
	for i := range p.choices {
		gr := &p.rep.Groups[i]
		if gr.Probe == nil || gr.Probe.Outcome != ProbeWrites {
			continue
		}
		left := p.c.MaxObjects - p.rep.Totals.Selected
		if left <= 0 {
			p.rep.Stopped = "max-objects"
			break
		}
		if p.short() {
			p.rep.Stopped = "deadline"
			break
		}
		counts, err := p.recoverGroup(ctx, &p.choices[i], left)
		gr.Recovered = counts
		p.rep.Totals.Add(*counts)
		switch {
		case errors.Is(err, errBudget):
			p.rep.Stopped = "deadline"
			return nil
		case err != nil:
			return fmt.Errorf("recovering %s: %w", groupName(*gr), err)
		}
	}
	return nil
}

// short reports whether the time left before the deadline is under the
// margin.
func (p *pass) short() bool {
	return !p.c.Deadline.IsZero() && p.c.Now().Add(p.c.Margin).After(p.c.Deadline)
}

// recoverGroup is dla recover of the group's selection as triage prints
// it (its error class, its first and last date), less the objects tried
// MaxAttempts times, at most limit objects. It reads the keys triage read
// of the group (the filter still applies to each), so that a pass reads
// its lookback once: an object gone since is counted gone elsewhere, one
// archived since waits for the next pass.
func (p *pass) recoverGroup(ctx context.Context, c *Choice, limit int) (*Counts, error) {
	g := c.Group
	class := g.Class
	scope := selection.Scope{Layout: p.c.Layout, Area: dla.AreaSQS, Limit: limit,
		Filter: dla.Filter{ErrorClass: &class, From: g.FirstDate, To: g.LastDate}}
	if p.c.MaxAttempts > 0 {
		scope.Skip = p.overAttempts
	}
	counts := &Counts{OverAttempts: p.over[c.Key]}
	if keys, read := p.keys[c.Key]; read {
		if len(keys) == 0 {
			return counts, nil // every object of the group is over its tries
		}
		scope.Keys = keys
	}
	s, err := dlarecover.Open(ctx, dlarecover.Options{Store: p.c.Store, Location: p.c.Location, Scope: scope,
		DatabaseURL: p.c.DatabaseURL, DBSecret: p.c.DBSecret, AWS: p.c.AWS, Settings: p.c.Settings, Offline: p.c.Offline, Topics: p.c.Topics,
		Concurrency: p.c.Concurrency, Now: p.c.Now, Explain: p.c.Explain, Warnf: p.c.Warnf,
		Acted: func(o dlarecover.Object) {
			if p.rec != nil {
				p.rec.Add(o.AuditItem())
			}
			if p.c.Acted != nil {
				p.c.Acted(o)
			}
		}})
	if err != nil {
		return counts, err
	}
	defer s.Close()
	if _, err := s.Plan(ctx); err != nil {
		return counts, err
	}
	sum, err := s.Run(ctx, func(dlarecover.Object) error {
		if p.short() {
			return errBudget
		}
		return nil
	})
	if sum != nil {
		counts.Selected, counts.Written, counts.Dropped = sum.Selected, sum.Written, sum.Dropped
		counts.Failed, counts.Left = sum.Failed, sum.Left+sum.NotProcessed
	}
	var stopped *dlarecover.StoppedError
	if errors.As(err, &stopped) {
		// The database failed again mid-group: what is left stays for the
		// next pass, and the group waits.
		gs, _ := BackoffOf(p.last).After(c.Key, ProbeEnvironment, p.c.Now().UTC())
		p.state.Groups = append(p.state.Groups, gs)
		return counts, nil
	}
	return counts, err
}

// finish notifies and ends the record with the pass's state. err is what
// stopped the pass, if anything; it is returned as it is, with the report.
func (p *pass) finish(ctx context.Context, err error) (*Report, error) {
	ctx = context.WithoutCancel(ctx)
	p.rep.EndedAt = p.c.Now().UTC()
	p.rep.Totals.Groups = len(p.rep.Groups)
	for _, g := range p.rep.Groups {
		switch {
		case g.Decision == Waits || g.Probe != nil && g.Probe.Outcome == ProbeEnvironment:
			p.rep.Totals.Waiting++
		case g.Decision == Person || g.Probe != nil && g.Probe.Outcome == ProbeNoWrite:
			p.rep.Totals.Person++
		}
	}
	p.notify(ctx, err)
	if p.rec != nil {
		state, _ := json.Marshal(p.state)
		fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		t := p.rep.Totals
		ferr := p.rec.Finish(fctx, audit.Finished{Counts: map[string]int{"selected": t.Selected, "written": t.Written,
			"dropped": t.Dropped, "failed": t.Failed, "left": t.Left, "over_attempts": t.OverAttempts,
			"groups": t.Groups, "tried": t.Tried, "waiting": t.Waiting, "person": t.Person},
			ExitCode: exitCode(err), Interrupted: ctx.Err() != nil, Error: errText(err), State: state})
		if ferr != nil {
			p.c.Warnf("audit: the pass's record was not finished: %v", ferr)
		}
	}
	return p.rep, err
}

// notify sends the pass's notification when there is a topic and news.
func (p *pass) notify(ctx context.Context, err error) {
	nr := &p.rep.Notification
	nr.Topic = p.c.Topic
	switch {
	case p.c.DryRun:
		nr.Why = "dry run"
		return
	case errors.Is(err, ErrNotConfirmed):
		nr.Why = "not confirmed"
		return
	case err != nil && p.rec == nil:
		// Failed before anything could change (the archive unreadable):
		// a report of nothing would read as an all-clear.
		nr.Why = "the pass failed before its record: " + p.c.Explain(err)
		return
	case p.c.Notify == nil:
		nr.Why = "no topic"
		return
	}
	n := Notify(p.rep)
	if !n.Worth(p.rep, p.last.Notified) {
		nr.Why = "nothing changed since the last notification"
		if p.last.NotifiedAt != nil {
			nr.Why += " (" + p.last.NotifiedAt.UTC().Format(time.RFC3339) + ")"
		}
		return
	}
	nctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	id, perr := p.c.Notify(nctx, n)
	if perr != nil {
		nr.Why = "not sent: " + p.c.Explain(perr)
		p.c.Warnf("the notification was not sent: %s", p.c.Explain(perr))
		return
	}
	now := p.c.Now().UTC()
	nr.Sent, nr.MessageID = true, id
	p.state.Notified, p.state.NotifiedAt = n.Digest, &now
}

func exitCode(err error) int {
	if err != nil {
		return 1
	}
	return 0
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
