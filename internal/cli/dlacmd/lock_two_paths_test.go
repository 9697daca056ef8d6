package dlacmd

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/deadletter/deadletter/internal/dla/gen"
)

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}

// The archive lock is keyed by the local archive's path, so one archive
// reached by two paths is two archives to the lock: the same share mounted
// at /mnt/dla on one host and /data/dla on another (NFS, EFS), or a bind
// mount on one host. Two operators recovering it into the one database are
// not refused, and run at once (item 5's duplicate writes and racing
// moves). Keying a local archive by its stack folder's device and inode,
// or by a marker file inside it, would not depend on the path. Here a bind
// mount gives the second path (the test needs root; it is skipped without).
func TestSameLocalArchiveByTwoPathsIsOneLock(t *testing.T) {
	h := localHostile(t)
	ctx := context.Background()
	generateInto(t, filepath.Dir(h.spec), gen.Options{Stack: "demo", Count: 1500, Seed: 3, MinGranules: 1, MaxGranules: 3, Malformed: -1})
	second := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(second, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount(filepath.Dir(h.spec), second, "", syscall.MS_BIND, ""); err != nil {
		t.Skipf("cannot bind-mount a second path to the archive: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(second, 0) })
	db := hostileDB(t)
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	done := make(chan runResult, 1)
	go func() {
		done <- runAt(t, time.Now, noPrompt, "", "recover", "--archive", h.spec, "--database-url", db, "--offline", "--yes", "--concurrency", "1")
	}()
	var locked bool
	for i := 0; i < 300 && !locked; i++ {
		_ = conn.QueryRow(ctx, `SELECT count(*) > 0 FROM pg_locks WHERE locktype = 'advisory' AND granted
			AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&locked)
		if !locked {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if !locked {
		t.Fatal("run A never took its lock")
	}
	b := runAt(t, time.Now, noPrompt, "", "recover", "--archive", filepath.Join(second, "demo"), "--database-url", db, "--offline", "--yes", "--limit", "5")
	running := true
	select {
	case <-done:
		running = false
	default:
	}
	a := <-done
	if !running {
		t.Fatalf("run A ended before B was checked; the test proves nothing (A exit %d)", a.code)
	}
	if b.code != 1 || !strings.Contains(b.stderr, "lock") {
		t.Errorf("run B on the same archive by a second path (exit %d) ran while run A held the archive's lock:\n%s", b.code, firstLines(b.stderr, 3))
	}
}
