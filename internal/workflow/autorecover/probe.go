package autorecover

import (
	"context"
	"errors"
	"time"

	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/selection"
	"github.com/deadletter/deadletter/internal/triage"
	"github.com/deadletter/deadletter/internal/workflow/dlarecover"
)

// probe chooses the groups (Choose, with the backoff the last pass left)
// and runs recover's rolled-back dry run on the sample of each one tried.
func (p *pass) probe(ctx context.Context) error {
	now := p.c.Now().UTC()
	backoff := BackoffOf(p.last)
	p.state = PassState{Schema: StateSchema, Notified: p.last.Notified, NotifiedAt: p.last.NotifiedAt}
	p.choices = Choose(p.tri.Groups(), backoff, now)
	for i := range p.choices {
		c := &p.choices[i]
		gr := p.groupReport(c)
		if c.Decision == Waits {
			p.state.Groups = append(p.state.Groups, backoff[c.Key]) // carried as it was
		}
		if c.Decision == Try {
			pr, err := p.probeGroup(ctx, c)
			if err != nil {
				return err
			}
			gr.Probe = pr
			if s, waits := backoff.After(c.Key, pr.Outcome, now); waits {
				p.state.Groups = append(p.state.Groups, s)
				until := s.WaitUntil
				gr.WaitUntil = &until
			}
			p.rep.Totals.Tried++
		}
		p.rep.Groups = append(p.rep.Groups, gr)
	}
	return nil
}

// groupReport is the report's line of a choice, before its probe.
func (p *pass) groupReport(c *Choice) GroupReport {
	g := c.Group
	gr := GroupReport{Class: g.Rule.Class, Rule: g.Rule.ID, Count: g.Count, FirstDate: g.FirstDate, LastDate: g.LastDate,
		Decision: c.Decision, Why: c.Why, Verdict: g.Verdict()}
	if !g.Unreadable {
		class := g.Class
		gr.ErrorClass = &class
		gr.Command = p.command(g)
	}
	if c.Decision == Waits {
		until := c.WaitUntil
		gr.WaitUntil = &until
	}
	return gr
}

// command is the command a person would run for g, as triage prints it
// (Config.Command), or none.
func (p *pass) command(g *triage.Group) []string {
	if p.c.Command == nil {
		return nil
	}
	return p.c.Command(g)
}

// probeGroup runs recover's dry run on c's sample (the objects of it not
// tried too often already). A database that could not be opened, an
// environment error that stops the dry run, or an object left because
// the environment failed, make the group wait.
func (p *pass) probeGroup(ctx context.Context, c *Choice) (*Probe, error) {
	pr := &Probe{Failed: map[string]int{}}
	var keys []string
	for _, k := range c.Group.Sample {
		if !p.overAttempts(k) {
			keys = append(keys, k)
		}
	}
	if p.dbErr != nil {
		pr.Outcome, pr.Error = ProbeEnvironment, p.c.Explain(p.dbErr)
		return pr, nil
	}
	if len(keys) == 0 {
		pr.Outcome = ProbeNoWrite
		return pr, nil
	}
	t0 := time.Now()
	scope := selection.Scope{Layout: p.c.Layout, Area: dla.AreaSQS, Keys: keys}
	err := dryRun(ctx, p, scope, func(o dlarecover.Object) error {
		pr.Tried++
		switch {
		case o.Result == dlarecover.ResultWritten || o.Result == dlarecover.ResultDropped:
			pr.Writes++
		case o.ErrorClass == "Transient":
			pr.Outcome, pr.Error = ProbeEnvironment, o.Error
		case o.Result == dlarecover.ResultFailed:
			pr.Failed[dla.ErrorClass(o.Error)]++
		default:
			pr.Failed[string(o.Result)]++
		}
		return nil
	})
	pr.Duration = time.Since(t0)
	var stopped *dlarecover.StoppedError
	switch {
	case errors.As(err, &stopped):
		pr.Outcome, pr.Error = ProbeEnvironment, p.c.Explain(stopped.Err)
	case err != nil && ctx.Err() == nil && isEnvironment(err):
		pr.Outcome, pr.Error = ProbeEnvironment, p.c.Explain(err)
	case err != nil:
		return nil, err
	case pr.Outcome == ProbeEnvironment:
	case pr.Writes > 0:
		pr.Outcome = ProbeWrites
	default:
		pr.Outcome = ProbeNoWrite
	}
	return pr, nil
}
