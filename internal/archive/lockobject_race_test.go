package archive_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/archive"
)

// gatedStore is a Store whose first Delete of key announces itself and then
// waits: the moment between DeleteCheckedBody's read-and-compare and its
// delete (a local archive has no conditional delete).
type gatedStore struct {
	archive.Store
	key     string
	once    sync.Once
	reached chan struct{}
	gate    chan struct{}
}

func (g *gatedStore) Delete(ctx context.Context, key string) error {
	if key == g.key {
		g.once.Do(func() {
			close(g.reached)
			<-g.gate
		})
	}
	return g.Store.Delete(ctx, key)
}

// Two runs taking over one stale lock (a killed run's, this host) at once:
// B has read the stale lock and compared it and waits before its delete;
// A tries meanwhile. On a local archive DeleteCheckedBody is a read, a
// compare and a plain delete, so a takeover without the marker let B's
// delete remove A's new lock and both held the archive. One of them holds
// it, never both.
func TestLockTakeoverByTwoRunsLeavesOneHolder(t *testing.T) {
	ctx := context.Background()
	store, err := archive.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const key = "demo/dead-letter-archive/locks/migrate-legacy.json"
	host, _ := os.Hostname()
	stale, _ := json.Marshal(archive.LockHolder{Command: "dla migrate-legacy", Host: host, PID: 1<<22 + 1, Since: time.Now().Add(-time.Hour)})
	if err := store.Put(ctx, key, stale); err != nil {
		t.Fatal(err)
	}
	g := &gatedStore{Store: store, key: key, reached: make(chan struct{}), gate: make(chan struct{})}
	type result struct {
		release func()
		err     error
	}
	bDone := make(chan result, 1)
	go func() {
		rel, err := archive.TakeLock(ctx, g, key, "dla migrate-legacy")
		bDone <- result{rel, err}
	}()
	select {
	case <-g.reached:
	case <-time.After(10 * time.Second):
		t.Fatal("B never reached its delete of the stale lock")
	}
	// A, meanwhile: the same stale lock, taken over to the end.
	relA, errA := archive.TakeLock(ctx, store, key, "dla migrate-legacy")
	close(g.gate)
	b := <-bDone
	if errA == nil {
		defer relA()
	}
	if b.err == nil {
		defer b.release()
	}
	if errA == nil && b.err == nil {
		held, _ := store.Get(ctx, key)
		t.Errorf("both runs took the lock (A, then B over A's live lock); the lock now holds %s", held)
	}
	if errA != nil && b.err != nil {
		t.Errorf("neither run took the stale lock: A %v; B %v", errA, b.err)
	}
}

// A lock object that is not JSON (a truncated write, another tool's file)
// is refused as unreadable, naming no invented holder (no "pid 0", no year
// 1).
func TestGarbageLockIsNamedAsSuch(t *testing.T) {
	ctx := context.Background()
	store, err := archive.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const key = "demo/dead-letter-archive/locks/migrate-legacy.json"
	if err := store.Put(ctx, key, []byte("\x00\x01garbage{")); err != nil {
		t.Fatal(err)
	}
	_, err = archive.TakeLock(ctx, store, key, "dla migrate-legacy")
	var le *archive.LockedError
	if !errors.As(err, &le) {
		t.Fatalf("garbage lock: %v", err)
	}
	if msg := err.Error(); strings.Contains(msg, "0001-01-01") || strings.Contains(msg, "pid 0") {
		t.Errorf("a garbage lock is reported with an invented holder: %s", msg)
	}
}
