package gctune

import (
	"runtime/debug"
	"testing"
)

// Tune sets what the environment leaves open, LimitWithGC ties the limit
// to the GOGC, and undo sets both back.
func TestTuneLeavesWhatTheEnvironmentNamesAndUndoesTheRest(t *testing.T) {
	gc0, lim0 := debug.SetGCPercent(-1), debug.SetMemoryLimit(-1)
	debug.SetGCPercent(gc0)
	defer debug.SetGCPercent(gc0)
	defer debug.SetMemoryLimit(lim0)
	for _, c := range []struct {
		name           string
		env            map[string]string
		withGC         bool
		wantGC, wantML bool
	}{
		{"nothing set", nil, false, true, true},
		{"GOGC set", map[string]string{"GOGC": "50"}, false, false, true},
		{"GOGC set, limit with GC", map[string]string{"GOGC": "50"}, true, false, false},
		{"GOMEMLIMIT set", map[string]string{"GOMEMLIMIT": "1GiB"}, false, true, false},
	} {
		undo := Tune(func(k string) string { return c.env[k] }, Settings{GCPercent: 333, MemoryLimit: 77 << 20, LimitWithGC: c.withGC})
		gc := debug.SetGCPercent(-1)
		debug.SetGCPercent(gc)
		ml := debug.SetMemoryLimit(-1)
		if (gc == 333) != c.wantGC || (ml == 77<<20) != c.wantML {
			t.Errorf("%s: GOGC %d, limit %d", c.name, gc, ml)
		}
		undo()
		if gc := debug.SetGCPercent(-1); gc != gc0 {
			t.Errorf("%s: GOGC %d after undo, want %d", c.name, gc, gc0)
		}
		debug.SetGCPercent(gc0)
		if ml := debug.SetMemoryLimit(-1); ml != lim0 {
			t.Errorf("%s: limit %d after undo, want %d", c.name, ml, lim0)
		}
	}
}
