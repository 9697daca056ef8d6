package autorecover

import (
	"testing"

	"github.com/deadletter/deadletter/internal/audit"
)

// A run counts once per key, however many items it has for it, and items
// without a key (queue messages) count for nothing.
func TestAttemptsCountEachRunOncePerKey(t *testing.T) {
	runs := []audit.Run{
		{Items: []audit.Item{{Key: "a", Action: "left"}, {Key: "a", Action: "left"}, {Key: "b", Action: "left"}}},
		{Items: []audit.Item{{Key: "a", Action: "left"}, {MessageID: "m", Action: "replayed"}}},
		{},
	}
	got := Attempts(runs)
	if got["a"] != 2 || got["b"] != 1 || len(got) != 2 {
		t.Errorf("attempts %v, want a:2 b:1", got)
	}
	if !OverAttempts(2, 2) || OverAttempts(1, 2) || OverAttempts(100, 0) {
		t.Error("OverAttempts: 2 of 2 is over, 1 of 2 is not, 0 is no limit")
	}
}
