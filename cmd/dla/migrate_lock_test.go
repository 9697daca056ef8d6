package main_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/archive"
)

// --break-lock is for the lock another migrate-legacy left (one that is not
// running): a lock whose holder is a live process of this very host is not
// broken, and the run is refused, so it never migrates beside the first.
func TestBreakLockRefusesALiveHolderOfThisHost(t *testing.T) {
	root := t.TempDir()
	store, err := archive.NewLocal(root)
	if err != nil {
		t.Fatal(err)
	}
	legacyArchive(t, store, 5)
	host, _ := os.Hostname()
	key := "demo/dead-letter-archive/locks/migrate-legacy.json"
	// This test's process stands for a migrate-legacy that is running.
	live, _ := json.Marshal(archive.LockHolder{Command: "dla migrate-legacy", Host: host, PID: os.Getpid(), Since: time.Now().UTC()})
	if err := store.Put(context.Background(), key, live); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := dla(t, nil, "", "migrate-legacy", "--archive", filepath.Join(root, "demo"), "--offline", "--yes", "--break-lock")
	held, _ := store.Get(context.Background(), key)
	if code == 0 || !strings.Contains(string(held), `"pid":`+itoa(os.Getpid())) {
		t.Errorf("--break-lock removed the lock of a live process of this host (exit %d):\n%s", code, stderr)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
