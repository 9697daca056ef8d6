package dlarecover

import "testing"

// The plan pass reads as many objects at once as the run writes, but no
// fewer than 16 and no more than 32, so a high --concurrency does not
// multiply what the pass holds in memory.
func TestPlanReadsFollowsTheConcurrencyWithinItsBounds(t *testing.T) {
	for conc, want := range map[int]int{0: 16, 1: 16, 8: 16, 16: 16, 24: 24, 32: 32, 64: 32, 1000: 32} {
		if got := PlanReads(conc); got != want {
			t.Errorf("PlanReads(%d) = %d, want %d", conc, got, want)
		}
	}
}
