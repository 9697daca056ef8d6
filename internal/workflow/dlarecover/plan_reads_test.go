package dlarecover

import "testing"

// The plan pass reads twice as many objects at once as the run writes,
// never fewer than 16 and no more than 64, so a high --concurrency does not
// multiply what the pass holds in memory (selection.Run bounds its bytes).
func TestPlanReadsFollowsTheConcurrencyWithinItsBounds(t *testing.T) {
	for conc, want := range map[int]int{0: 16, 1: 16, 8: 16, 12: 24, 16: 32, 32: 64, 64: 64, 1000: 64} {
		if got := PlanReads(conc); got != want {
			t.Errorf("PlanReads(%d) = %d, want %d", conc, got, want)
		}
	}
}
