package autorecover

import (
	"fmt"
	"time"

	"github.com/deadletter/deadletter/internal/triage"
)

// Decision is what a pass does with a group.
type Decision string

const (
	// Try: probe the group, and recover it if the probe writes.
	Try Decision = "try"
	// Waits: its backoff has not passed; not probed this pass.
	Waits Decision = "wait"
	// Person: never tried by a pass; a person decides (fix-first not
	// ready, permanent, unknown, unreadable).
	Person Decision = "person"
)

// Choice is a group and what the pass does with it, and why.
type Choice struct {
	Group    *triage.Group
	Key      GroupKey
	Decision Decision
	Why      string
	// WaitUntil is when a waiting group may be probed again.
	WaitUntil time.Time
}

// Choose decides, for each group of a triage (readiness checked, no probe
// yet), whether the pass tries it: transient groups and fix-first groups
// whose every record exists now, unless their backoff has not passed.
// Permanent, unknown and unreadable groups, and fix-first groups not
// ready, are left for a person, whatever a probe might say: a pass retries
// only what the rules call retryable. In triage's order.
func Choose(groups []*triage.Group, b Backoff, now time.Time) []Choice {
	out := make([]Choice, 0, len(groups))
	for _, g := range groups {
		c := Choice{Group: g, Key: KeyOf(g)}
		class, from := g.Shown()
		switch {
		case g.Unreadable:
			c.Decision, c.Why = Person, "unreadable: look at one object (dla show)"
		case class == triage.Transient && from != triage.FromProbe:
			c.Decision, c.Why = Try, "transient"
			if from == triage.FromReadiness {
				c.Why = "fix-first, and every record it needs exists now"
			}
			if until, waiting := b.Waiting(c.Key, now); waiting {
				c.Decision, c.WaitUntil = Waits, until
				c.Why = fmt.Sprintf("the database was still failing at the last probe (%d in a row): waits until %s",
					b[c.Key].Failures, until.UTC().Format(time.RFC3339))
			}
		case g.Rule.Class == triage.FixFirst:
			c.Decision, c.Why = Person, g.Verdict()
		case g.Rule.Class == triage.Permanent:
			c.Decision, c.Why = Person, "permanent: never succeeds as it is ("+g.Rule.Why+")"
		default:
			c.Decision, c.Why = Person, "unknown: no rule matches; look at one before retrying"
		}
		out = append(out, c)
	}
	return out
}

// KeyOf is g's name across passes.
func KeyOf(g *triage.Group) GroupKey { return GroupKey{Class: g.Class, Unreadable: g.Unreadable} }
