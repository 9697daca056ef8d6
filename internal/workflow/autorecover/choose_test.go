package autorecover

import (
	"context"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/triage"
)

// outage is a triage of the shape an outage leaves: a transient group, a
// fix-first group (ready when ready is true), a permanent group, an
// unknown one and unreadable objects.
func outage(t *testing.T, ready bool) *triage.Triage {
	t.Helper()
	tr := triage.New()
	add := func(key, text string) {
		tr.Add(&dla.Decoded{Record: dla.Record{Key: key, Partition: "2026-12-01", Error: text, HasError: true}})
	}
	add("t1", "KnexTimeoutError: Knex: Timeout acquiring a connection. The pool is probably full.")
	add("t2", "connect ECONNREFUSED 10.0.0.1:5432")
	add("f1", `RecordDoesNotExist: Record in collections with identifiers {"name":"MOD09GQ","version":"006"} does not exist.`)
	add("p1", "SchemaValidationError: granule.status must be one of running, completed, failed")
	add("u1", "Something nobody has seen before")
	tr.AddUnreadable("x1", "2026-12-01")
	if err := tr.CheckReadiness(context.Background(), func(context.Context, triage.Need) (bool, error) { return ready, nil }); err != nil {
		t.Fatal(err)
	}
	return tr
}

func decisions(cs []Choice) map[string]Decision {
	out := map[string]Decision{}
	for _, c := range cs {
		name := c.Key.Class
		if c.Key.Unreadable {
			name = "(unreadable)"
		}
		out[name] = c.Decision
	}
	return out
}

// A pass tries transient groups and fix-first groups that are ready, and
// nothing else: permanent, unknown, unreadable and not-ready fix-first
// groups are a person's, whatever a probe would say.
func TestChooseTriesTransientAndReadyFixFirstGroupsOnly(t *testing.T) {
	now := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	for _, ready := range []bool{false, true} {
		got := decisions(Choose(outage(t, ready).Groups(), Backoff{}, now))
		fixFirst := Person
		if ready {
			fixFirst = Try
		}
		want := map[string]Decision{
			"KnexTimeoutError: Knex: Timeout acquiring a connection. The pool is probably full.": Try,
			"connect ECONNREFUSED <id>:<n>": Try,
			`RecordDoesNotExist: Record in collections with identifiers {"name":"<v>","version":"<v>"} does not exist.`: fixFirst,
			"SchemaValidationError: granule.status must be one of running, completed, failed":                           Person,
			"Something nobody has seen before": Person,
			"(unreadable)":                     Person,
		}
		for k, w := range want {
			if got[k] != w {
				t.Errorf("ready=%v: %q: %q, want %q", ready, k, got[k], w)
			}
		}
		if len(got) != len(want) {
			t.Errorf("ready=%v: %d groups, want %d: %v", ready, len(got), len(want), got)
		}
	}
}

// A group whose backoff has not passed waits, with the time it may be
// probed again; the others are tried as before.
func TestChooseLeavesAGroupInItsBackoffWaiting(t *testing.T) {
	now := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	knex := GroupKey{Class: "KnexTimeoutError: Knex: Timeout acquiring a connection. The pool is probably full."}
	b := Backoff{knex: {GroupKey: knex, Failures: 2, LastProbe: now.Add(-10 * time.Minute), WaitUntil: now.Add(20 * time.Minute)}}
	for _, c := range Choose(outage(t, false).Groups(), b, now) {
		switch c.Key {
		case knex:
			if c.Decision != Waits || !c.WaitUntil.Equal(now.Add(20*time.Minute)) {
				t.Errorf("knex group: %s until %v, want wait until %v", c.Decision, c.WaitUntil, now.Add(20*time.Minute))
			}
		case GroupKey{Class: "connect ECONNREFUSED <id>:<n>"}:
			if c.Decision != Try {
				t.Errorf("connection group: %s, want try", c.Decision)
			}
		}
	}
}
