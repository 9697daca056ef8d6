package autorecover

import "github.com/deadletter/deadletter/internal/audit"

// Attempts is, by archive key, how many recorded runs (their items
// loaded) tried to recover the object: a run counts once for a key
// however many items it has for it. An object still in sqs/ that runs
// tried max-attempts times is left for a person.
func Attempts(runs []audit.Run) map[string]int {
	out := map[string]int{}
	for i := range runs {
		seen := map[string]bool{}
		for _, it := range runs[i].Items {
			if it.Key == "" || seen[it.Key] {
				continue
			}
			seen[it.Key] = true
			out[it.Key]++
		}
	}
	return out
}

// OverAttempts reports whether an object tried n times may not be tried
// again under max (0: no limit).
func OverAttempts(n, max int) bool { return audit.AtLimit(n, max) }
