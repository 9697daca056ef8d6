package audit

import (
	"testing"
	"time"
)

func TestReplaysCountsEachRunOnceAndOnlyReplayedItems(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	run := func(id string, at time.Time, reason string, items ...Item) Run {
		return Run{Started: Started{RunID: id, StartedAt: at, Reason: reason}, Items: items}
	}
	runs := []Run{ // newest first, as List gives them
		run("r3", t0.Add(48*time.Hour), "",
			Item{MessageID: "m5", NotificationID: "n1", Action: "replayed"},
			Item{MessageID: "m6", NotificationID: "n3", Action: "held_back"}),
		run("r2", t0.Add(24*time.Hour), "INC-9",
			Item{MessageID: "m3", NotificationID: "n1", Action: "replayed"},
			Item{MessageID: "m4", NotificationID: "n1", Action: "replayed"}, // same run: once
			Item{MessageID: "m7", NotificationID: "n2", Action: "uncertain"}),
		run("r1", t0, "INC-9",
			Item{MessageID: "m1", NotificationID: "n1", Action: "replayed"},
			Item{MessageID: "m2", NotificationID: "n2", Action: "replayed"},
			Item{MessageID: "m8", Action: "replayed"}), // no notification id
	}
	got := Replays(runs)
	counts := ReplayCounts(got)
	want := map[string]int{"n1": 3, "n2": 1}
	if len(counts) != len(want) {
		t.Fatalf("counts %v, want %v", counts, want)
	}
	for id, n := range want {
		if counts[id] != n {
			t.Errorf("%s: %d replays, want %d (all: %v)", id, counts[id], n, counts)
		}
	}
	if rs := got["n1"]; rs[0].RunID != "r1" || rs[1].RunID != "r2" || rs[2].RunID != "r3" || rs[1].Reason != "INC-9" {
		t.Errorf("n1's replays are not oldest first with their reasons: %+v", rs)
	}
	for _, c := range []struct {
		n, max int
		at     bool
	}{{3, 3, true}, {4, 3, true}, {2, 3, false}, {100, 0, false}, {0, 1, false}, {1, 1, true}} {
		if AtLimit(c.n, c.max) != c.at {
			t.Errorf("AtLimit(%d, %d) = %v, want %v", c.n, c.max, !c.at, c.at)
		}
	}
}
