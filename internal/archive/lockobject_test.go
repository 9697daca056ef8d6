package archive_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/archive"
)

// A lock object is taken only where none is; another host's is refused,
// naming its holder; a dead process's of this host is taken over; release
// removes only this run's.
func TestLockObjectRefusesALiveHolderAndTakesOverADeadOne(t *testing.T) {
	ctx := context.Background()
	store, err := archive.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const key = "demo/dead-letter-archive/locks/x.json"
	put := func(h archive.LockHolder) {
		b, _ := json.Marshal(h)
		if err := store.Put(ctx, key, b); err != nil {
			t.Fatal(err)
		}
	}
	host, _ := os.Hostname()

	put(archive.LockHolder{Command: "dla migrate-legacy", Host: "another-host", PID: 1, Since: time.Now()})
	_, err = archive.TakeLock(ctx, store, key, "dla migrate-legacy")
	var le *archive.LockedError
	if !errors.As(err, &le) || le.Holder.Host != "another-host" {
		t.Fatalf("another host's lock: %v", err)
	}

	// pid 2^22+1 is above Linux's pid_max default: no such process.
	put(archive.LockHolder{Command: "dla migrate-legacy", Host: host, PID: 1<<22 + 1, Since: time.Now()})
	release, err := archive.TakeLock(ctx, store, key, "dla migrate-legacy")
	if err != nil {
		t.Fatalf("a dead process's lock was not taken over: %v", err)
	}
	b, _ := store.Get(ctx, key)
	var h archive.LockHolder
	if json.Unmarshal(b, &h) != nil || h.PID != os.Getpid() {
		t.Fatalf("the lock holds %s", b)
	}
	release()
	if _, err := store.Get(ctx, key); !errors.Is(err, archive.ErrNotFound) {
		t.Fatalf("after release: %v", err)
	}
}

// A run killed while taking over a stale lock, after removing it and
// before writing its own, leaves its takeover marker and no lock: the next
// run, which takes the lock at once, removes that marker (its holder is a
// dead process of this host), and a live holder's marker is left alone.
func TestLockTakenAtOnceRemovesADeadRunsTakeoverMarker(t *testing.T) {
	ctx := context.Background()
	store, err := archive.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const key = "demo/dead-letter-archive/locks/x.json"
	host, _ := os.Hostname()
	for _, c := range []struct {
		name string
		pid  int
		kept bool
	}{
		{"a dead process's marker", 1<<22 + 1, false},
		{"a live process's marker", os.Getppid(), true},
	} {
		b, _ := json.Marshal(archive.LockHolder{Command: "dla migrate-legacy", Host: host, PID: c.pid, Since: time.Now()})
		if err := store.Put(ctx, key+".takeover", b); err != nil {
			t.Fatal(err)
		}
		release, err := archive.TakeLock(ctx, store, key, "dla migrate-legacy")
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		release()
		_, err = store.Get(ctx, key+".takeover")
		if kept := err == nil; kept != c.kept {
			t.Errorf("%s: marker kept %v, want %v (%v)", c.name, kept, c.kept, err)
		}
		_ = store.Delete(ctx, key+".takeover")
	}
}

// A lease of another host is refused until it lapses, then taken over (a
// Lambda killed at its deadline never releases its lock); the lease taken
// names its end.
func TestALeaseOfAnotherHostIsTakenOverOnceItLapses(t *testing.T) {
	ctx := context.Background()
	store, err := archive.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const key = "demo/dead-letter-archive/locks/autorecover.json"
	put := func(h archive.LockHolder) {
		b, _ := json.Marshal(h)
		if err := store.Put(ctx, key, b); err != nil {
			t.Fatal(err)
		}
	}
	future, past := time.Now().Add(time.Hour), time.Now().Add(-time.Second)
	put(archive.LockHolder{Command: "dla autorecover", Host: "sandbox-1", PID: 1, Since: time.Now(), Until: &future})
	var le *archive.LockedError
	if _, err := archive.TakeLease(ctx, store, key, "dla autorecover", time.Now().Add(20*time.Minute)); !errors.As(err, &le) {
		t.Fatalf("a running lease of another host: %v", err)
	}
	put(archive.LockHolder{Command: "dla autorecover", Host: "sandbox-1", PID: 1, Since: time.Now(), Until: &past})
	until := time.Now().Add(20 * time.Minute).UTC().Truncate(time.Second)
	release, err := archive.TakeLease(ctx, store, key, "dla autorecover", until)
	if err != nil {
		t.Fatalf("a lapsed lease was not taken over: %v", err)
	}
	b, _ := store.Get(ctx, key)
	var h archive.LockHolder
	if json.Unmarshal(b, &h) != nil || h.PID != os.Getpid() || h.Until == nil || !h.Until.Equal(until) {
		t.Fatalf("the lease holds %s", b)
	}
	// A lock without a lease of another host stays refused however old.
	release()
	put(archive.LockHolder{Command: "dla autorecover", Host: "sandbox-1", PID: 1, Since: time.Now().Add(-48 * time.Hour)})
	if _, err := archive.TakeLease(ctx, store, key, "dla autorecover", until); !errors.As(err, &le) {
		t.Fatalf("another host's lock without a lease: %v", err)
	}
}
