package autorecover

import (
	"time"
)

// The backoff of a group whose probe found the environment still failing:
// FirstWait after the first such probe, doubling with each one after it,
// never more than MaxWait.
const (
	FirstWait = 15 * time.Minute
	MaxWait   = 4 * time.Hour
)

// Wait is how long a group waits after its failures-th probe in a row
// that found the environment failing (failures >= 1): 15 min, 30 min,
// 1 h, 2 h, then 4 h each time.
func Wait(failures int) time.Duration {
	if failures < 1 {
		return 0
	}
	d := FirstWait
	for i := 1; i < failures; i++ {
		d *= 2
		if d >= MaxWait {
			return MaxWait
		}
	}
	return d
}

// GroupKey names a group across passes: its error class, or the
// unreadable objects.
type GroupKey struct {
	Class      string `json:"error_class"`
	Unreadable bool   `json:"unreadable,omitempty"`
}

// ProbeOutcome is what a pass's probe of a group found.
type ProbeOutcome string

const (
	// ProbeWrites: recover's dry run would write objects of the group.
	ProbeWrites ProbeOutcome = "writes"
	// ProbeEnvironment: the dry run met an environment error (the
	// database refusing, a timeout): the group waits.
	ProbeEnvironment ProbeOutcome = "environment"
	// ProbeNoWrite: the dry run wrote none of the sample for reasons of
	// the messages (they would fail or be dropped): left for a person.
	ProbeNoWrite ProbeOutcome = "no-write"
)

// GroupState is one group's backoff as a pass leaves it, carried in the
// pass's record for the next pass.
type GroupState struct {
	GroupKey
	// Failures is how many probes in a row found the environment failing
	// (0 once one writes).
	Failures int `json:"failures"`
	// LastProbe is when the last of those probes ran, WaitUntil when the
	// group may be probed again.
	LastProbe time.Time `json:"last_probe"`
	WaitUntil time.Time `json:"wait_until"`
}

// PassState is what a pass leaves for the next: the groups that wait, and
// the digest of the last notification sent (what "changed since the last
// one" compares with).
type PassState struct {
	Schema string       `json:"schema"`
	Groups []GroupState `json:"waiting,omitempty"`
	// Notified is the digest of the last notification sent, by this pass
	// or carried from an earlier one; NotifiedAt when it was sent.
	Notified   string     `json:"notified,omitempty"`
	NotifiedAt *time.Time `json:"notified_at,omitempty"`
}

// StateSchema names PassState's format.
const StateSchema = "deadletter.dla.autorecover.state/v1"

// Backoff is the waiting groups as the last recorded pass left them.
type Backoff map[GroupKey]GroupState

// BackoffOf is the backoff an earlier pass left (the zero PassState: none).
func BackoffOf(last PassState) Backoff {
	b := Backoff{}
	for _, g := range last.Groups {
		b[g.GroupKey] = g
	}
	return b
}

// Waiting reports whether g must still wait at now, and until when.
func (b Backoff) Waiting(g GroupKey, now time.Time) (time.Time, bool) {
	s, ok := b[g]
	if !ok || s.Failures == 0 || !now.Before(s.WaitUntil) {
		return time.Time{}, false
	}
	return s.WaitUntil, true
}

// After is g's state once probed at now with outcome o: a probe that meets
// the environment failing adds a failure and waits Wait(failures); any
// other outcome ends the backoff (ok false: nothing to carry).
func (b Backoff) After(g GroupKey, o ProbeOutcome, now time.Time) (GroupState, bool) {
	if o != ProbeEnvironment {
		return GroupState{}, false
	}
	n := b[g].Failures + 1
	return GroupState{GroupKey: g, Failures: n, LastProbe: now, WaitUntil: now.Add(Wait(n))}, true
}
