package audit

import (
	"sort"
	"time"
)

// ActionReplayed is the action of an item whose message a replay sent to
// its priority queue: what the replay guard counts.
const ActionReplayed = "replayed"

// Replay is one earlier run that replayed a notification.
type Replay struct {
	RunID  string    `json:"run_id"`
	At     time.Time `json:"at"`
	Actor  Actor     `json:"actor"`
	Reason string    `json:"reason"`
}

// Replays are, by notification id, the runs (their items loaded) that
// replayed it, oldest first: a run counts once for a notification however
// many of its messages it sent. Items without a notification id, and
// actions other than ActionReplayed, count for nothing.
func Replays(runs []Run) map[string][]Replay {
	out := map[string][]Replay{}
	for i := range runs {
		r := &runs[i]
		seen := map[string]bool{}
		for _, it := range r.Items {
			if it.Action != ActionReplayed || it.NotificationID == "" || seen[it.NotificationID] {
				continue
			}
			seen[it.NotificationID] = true
			out[it.NotificationID] = append(out[it.NotificationID], Replay{RunID: r.RunID, At: r.StartedAt, Actor: r.Actor, Reason: r.Reason})
		}
	}
	for _, rs := range out {
		sort.SliceStable(rs, func(i, j int) bool {
			if !rs[i].At.Equal(rs[j].At) {
				return rs[i].At.Before(rs[j].At)
			}
			return rs[i].RunID < rs[j].RunID
		})
	}
	return out
}

// ReplayCounts is how many runs replayed each notification.
func ReplayCounts(replays map[string][]Replay) map[string]int {
	out := make(map[string]int, len(replays))
	for id, rs := range replays {
		out[id] = len(rs)
	}
	return out
}

// AtLimit reports whether a notification replayed n times already may not
// be replayed again under max (0: no limit).
func AtLimit(n, max int) bool { return max > 0 && n >= max }
