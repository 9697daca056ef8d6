package gctune

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

// memoryLimit is recover's floor, the one these tests were measured with.
const (
	gcPercent   = 200
	memoryLimit = 48 << 20
)

// holdLive allocates n MiB that stay live until the returned slice is
// dropped, and collects, so that the live-heap metric counts them.
func holdLive(n int) [][]byte {
	held := make([][]byte, n)
	for i := range held {
		held[i] = make([]byte, 1<<20)
		held[i][0] = 1
	}
	runtime.GC()
	return held
}

// A run whose live heap is larger than the fixed ceiling gets a limit of
// twice it (what GOGC 100 allows), not one it nearly fills; once the heap
// is small again the limit is the ceiling again, never below it.
func TestMemoryLimitFollowsTheLiveHeap(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	held := holdLive(96)
	stop := followLiveHeap(memoryLimit, 5*time.Millisecond)
	defer stop()
	if got := debug.SetMemoryLimit(-1); got < 2*96<<20 {
		t.Fatalf("live heap 96 MiB: limit %d MiB, want at least %d", got>>20, 2*96)
	}
	runtime.KeepAlive(held)
	held = nil
	runtime.GC()
	deadline := time.Now().Add(5 * time.Second)
	for debug.SetMemoryLimit(-1) != memoryLimit && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := debug.SetMemoryLimit(-1); got != memoryLimit {
		t.Errorf("live heap small again: limit %d MiB, want the ceiling %d MiB", got>>20, memoryLimit>>20)
	}
	stop()
	debug.SetMemoryLimit(memoryLimit + 1)
	time.Sleep(20 * time.Millisecond)
	if got := debug.SetMemoryLimit(-1); got != memoryLimit+1 {
		t.Errorf("after stop the limit still moves: %d", got)
	}
}

// BenchmarkChurnUnderALargeLiveHeap is recover's allocation pattern
// (short-lived buffers of each object) while the run holds 128 MiB live
// (megabyte messages at a high concurrency), under recover's GOGC of 200:
// with the fixed 48 MiB ceiling, and with the ceiling following the live
// heap. It reports the collections per operation.
//
//	go test -run='^$' -bench=ChurnUnderALargeLiveHeap -benchtime=2000x ./internal/workflow/dlarecover/
func BenchmarkChurnUnderALargeLiveHeap(b *testing.B) {
	for _, c := range []struct {
		name   string
		follow bool
	}{{"fixed-48MiB", false}, {"following", true}} {
		b.Run(c.name, func(b *testing.B) {
			defer debug.SetGCPercent(debug.SetGCPercent(gcPercent))
			defer debug.SetMemoryLimit(debug.SetMemoryLimit(memoryLimit))
			held := holdLive(128)
			if c.follow {
				defer followLiveHeap(memoryLimit, 250*time.Millisecond)()
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			b.ResetTimer()
			var sink []byte
			for range b.N {
				for range 16 { // an object's layers and rows
					sink = make([]byte, 64<<10)
					sink[0] = 1
				}
			}
			b.StopTimer()
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(after.NumGC-before.NumGC)/float64(b.N), "GCs/op")
			runtime.KeepAlive(held)
			runtime.KeepAlive(sink)
		})
	}
}
