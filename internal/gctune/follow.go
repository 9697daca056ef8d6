package gctune

import (
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"
)

// The soft memory limit recover sets beside its wider GOGC
// (Settings.FollowEvery) is its floor while the run holds little, which is
// nearly always: each object's decoded layers and rows are short-lived. A run that holds more
// (messages of a megabyte at a concurrency of 64, `replace` payloads read
// from S3) would sit with its live heap near a fixed limit, where the
// collector runs back to back. So the limit follows the live heap: at
// least the floor, and otherwise twice the live heap plus slack, what
// the default GOGC of 100 would let the heap reach.

// liveHeapMetric is the heap the last collection found live.
const liveHeapMetric = "/gc/heap/live:bytes"

// memoryLimitSlack covers what the limit counts beside the heap (stacks,
// the runtime's own structures).
const memoryLimitSlack = 16 << 20

// scaledLimit is the soft memory limit for a live heap of live bytes.
func scaledLimit(floor int64, live uint64) int64 {
	return max(floor, 2*int64(live)+memoryLimitSlack)
}

// followLiveHeap sets the soft memory limit to scaledLimit of the live
// heap now and every interval after, until stop is called. It changes the
// limit only when it moves by more than an eighth, so that a steady run
// does not touch it.
func followLiveHeap(floor int64, every time.Duration) (stop func()) {
	sample := []metrics.Sample{{Name: liveHeapMetric}}
	var set int64
	adjust := func() {
		metrics.Read(sample)
		if sample[0].Value.Kind() != metrics.KindUint64 {
			return
		}
		want := scaledLimit(floor, sample[0].Value.Uint64())
		if d := want - set; d > set/8 || -d > set/8 {
			debug.SetMemoryLimit(want)
			set = want
		}
	}
	adjust()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				adjust()
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(done)
			wg.Wait()
		})
	}
}
