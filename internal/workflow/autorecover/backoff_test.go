package autorecover

import (
	"testing"
	"time"
)

func TestWaitDoublesFromFifteenMinutesToAFourHourCap(t *testing.T) {
	want := []time.Duration{0, 15 * time.Minute, 30 * time.Minute, time.Hour, 2 * time.Hour, 4 * time.Hour, 4 * time.Hour, 4 * time.Hour}
	for n, w := range want {
		if got := Wait(n); got != w {
			t.Errorf("Wait(%d) = %v, want %v", n, got, w)
		}
	}
	if got := Wait(1000); got != MaxWait {
		t.Errorf("Wait(1000) = %v (no overflow), want %v", got, MaxWait)
	}
}

// A group probed while the environment fails waits, a pass inside its
// backoff sees it waiting, the next failed probe doubles the wait, and a
// probe that writes ends it.
func TestBackoffIsCarriedFromPassToPassAndEndsWhenAProbeWrites(t *testing.T) {
	g := GroupKey{Class: "KnexTimeoutError: Knex: Timeout acquiring a connection."}
	t0 := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)

	var state PassState
	s, ok := BackoffOf(state).After(g, ProbeEnvironment, t0)
	if !ok || s.Failures != 1 || !s.WaitUntil.Equal(t0.Add(15*time.Minute)) {
		t.Fatalf("first failed probe: %+v %v", s, ok)
	}
	state.Groups = []GroupState{s}

	b := BackoffOf(state)
	if until, waiting := b.Waiting(g, t0.Add(14*time.Minute)); !waiting || !until.Equal(s.WaitUntil) {
		t.Errorf("inside the backoff: waiting %v until %v", waiting, until)
	}
	if _, waiting := b.Waiting(g, t0.Add(15*time.Minute)); waiting {
		t.Error("at the end of the backoff the group still waits")
	}
	if _, waiting := b.Waiting(GroupKey{Class: "other"}, t0); waiting {
		t.Error("a group never probed waits")
	}

	t1 := t0.Add(16 * time.Minute)
	s2, ok := b.After(g, ProbeEnvironment, t1)
	if !ok || s2.Failures != 2 || !s2.WaitUntil.Equal(t1.Add(30*time.Minute)) {
		t.Fatalf("second failed probe: %+v", s2)
	}
	if _, ok := BackoffOf(PassState{Groups: []GroupState{s2}}).After(g, ProbeWrites, t1.Add(time.Hour)); ok {
		t.Error("a probe that writes keeps a backoff")
	}
}
