package dlacmd

import (
	"math"
	"runtime/debug"
	"testing"
)

// tuneGC sets GOGC 200 and a 1 GiB soft limit, and leaves either alone
// when the environment names it (GOGC, GOMEMLIMIT win, as Go's own do).
func TestTuneGCYieldsToGOGCAndGOMEMLIMIT(t *testing.T) {
	gc := debug.SetGCPercent(100)
	limit := debug.SetMemoryLimit(math.MaxInt64)
	t.Cleanup(func() { debug.SetGCPercent(gc); debug.SetMemoryLimit(limit) })
	current := func() (int, int64) {
		p := debug.SetGCPercent(-1)
		debug.SetGCPercent(p)
		return p, debug.SetMemoryLimit(-1)
	}
	for _, tc := range []struct {
		env       map[string]string
		wantGC    int
		wantLimit int64
	}{
		{map[string]string{}, 200, 1 << 30},
		{map[string]string{"GOGC": "50"}, 100, 1 << 30},
		{map[string]string{"GOMEMLIMIT": "512MiB"}, 200, math.MaxInt64},
	} {
		debug.SetGCPercent(100)
		debug.SetMemoryLimit(math.MaxInt64)
		tuneGC(func(k string) string { return tc.env[k] })
		if p, l := current(); p != tc.wantGC || l != tc.wantLimit {
			t.Errorf("env %v: GOGC %d, limit %d; want %d, %d", tc.env, p, l, tc.wantGC, tc.wantLimit)
		}
	}
}
