package pushexport

import (
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Lock is the only thing that keeps two runs (an export and a resume, or
// two resumes) from appending to one FILE.partial. It must exclude: at no
// moment may two holders of Lock(out) exist. The unlock removes the lock
// file before it closes (and so releases) it; a run that opened the old
// file just before the removal then takes its flock, on an inode no longer
// linked, while a third run creates a new lock file and takes that: two
// holders at once, each appending to the partial file.
func TestLockExcludesWhileRunsComeAndGo(t *testing.T) {
	out := filepath.Join(t.TempDir(), "drained.ndjson")
	var holders, maxHolders atomic.Int32
	var wg sync.WaitGroup
	deadline := time.Now().Add(3 * time.Second)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) && maxHolders.Load() < 2 {
				unlock, err := Lock(out)
				if err != nil {
					continue // taken: refused, as a second run is
				}
				n := holders.Add(1)
				for {
					m := maxHolders.Load()
					if n <= m || maxHolders.CompareAndSwap(m, n) {
						break
					}
				}
				time.Sleep(50 * time.Microsecond)
				holders.Add(-1)
				unlock()
			}
		}()
	}
	wg.Wait()
	if m := maxHolders.Load(); m > 1 {
		t.Fatalf("%d runs held %s.partial.lock at once: both would append to %s.partial", m, out, out)
	}
}
