package legacymigrate

import (
	"context"
	"errors"
	"path"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/dla/gen"
)

// The migrator runs from its struct alone (no CLI): every legacy object
// ends in its date folder once, under its name, and a second run finds
// nothing to move.
func TestMigratorMovesEachLegacyObjectOnceWithoutTheCLI(t *testing.T) {
	store, err := archive.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	names := map[string]bool{}
	err = gen.Generate(gen.Options{Stack: "demo", Count: 120, Seed: 5, Days: 3, Malformed: -1, Start: time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)},
		func(o gen.Object) error {
			name := path.Base(o.Key) + ".json"
			names[name] = true
			return store.Put(ctx, "demo/dead-letter-archive/sqs/"+name, o.Body)
		})
	if err != nil {
		t.Fatal(err)
	}
	layout := dla.Layout{Stack: "demo"}
	m := &Migrator{Store: store, Layout: layout}
	var moved atomic.Int64
	if err := m.Run(ctx, 8, func(r Result) error {
		if r.Result != "moved" {
			t.Errorf("%s: %s", r.Key, r.Result)
		}
		moved.Add(1)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	_ = store.List(ctx, layout.AreaPrefix(dla.AreaSQS), false, func(e archive.Entry) error {
		rel := strings.TrimPrefix(e.Key, layout.AreaPrefix(dla.AreaSQS))
		if !strings.Contains(rel, "/") || !dla.IsDate(rel[:strings.Index(rel, "/")]) {
			t.Errorf("%s: not in a date folder", e.Key)
		}
		seen[path.Base(e.Key)]++
		return nil
	})
	for name := range names {
		if seen[name] != 1 {
			t.Errorf("%s: %d copies", name, seen[name])
		}
	}
	if int(moved.Load()) != len(names) {
		t.Errorf("%d reported for %d objects", moved.Load(), len(names))
	}
	n := 0
	if err := List(ctx, store, layout, func(archive.Entry) error { n++; return nil }); err != nil || n != 0 {
		t.Errorf("after the run, %d legacy objects are left (%v)", n, err)
	}
}

// Lock is one run at a time: a lock another host's run left is refused,
// unless breakLock (--break-lock), which removes it first; the lock taken
// is LockKey's, and its release frees it.
func TestLockRefusesAnotherHostsRunUnlessBroken(t *testing.T) {
	store, err := archive.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	layout := dla.Layout{Stack: "demo"}
	other := []byte(`{"command":"dla migrate-legacy","host":"elsewhere.example","pid":4242,"since":"2024-03-01T00:00:00Z"}`)
	if err := store.Put(ctx, LockKey(layout), other); err != nil {
		t.Fatal(err)
	}
	var locked *archive.LockedError
	if _, err := Lock(ctx, store, layout, false); !errors.As(err, &locked) || locked.Holder.Host != "elsewhere.example" {
		t.Fatalf("another host's lock: %v", err)
	}
	release, err := Lock(ctx, store, layout, true)
	if err != nil {
		t.Fatalf("--break-lock: %v", err)
	}
	if body, err := store.Get(ctx, LockKey(layout)); err != nil || strings.Contains(string(body), "elsewhere") {
		t.Fatalf("the lock after --break-lock: %q, %v", body, err)
	}
	release()
	if _, err := store.Get(ctx, LockKey(layout)); !errors.Is(err, archive.ErrNotFound) {
		t.Fatalf("the lock after the release: %v", err)
	}
}
