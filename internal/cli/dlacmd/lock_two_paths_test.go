package dlacmd

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
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
	h, db := lockArchive(t, 1500)
	second := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(second, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount(filepath.Dir(h.spec), second, "", syscall.MS_BIND, ""); err != nil {
		t.Skipf("cannot bind-mount a second path to the archive: %v", err)
	}
	t.Cleanup(func() {
		// Run B's archive store keeps its folders open (os.Root, cached
		// for the process's life) until it is collected: the mount is busy
		// until then.
		runtime.GC()
		if err := syscall.Unmount(second, 0); err != nil {
			t.Logf("unmount %s: %v", second, err)
		}
	})
	run := startLockedRun(t, h.spec, db, "")
	b := recoverAlongside(t, filepath.Join(second, "demo"), db)
	var a runResult
	running := true
	select {
	case a = <-run.done:
		running = false
	default:
		a = run.interrupt()
	}
	if !running {
		t.Fatalf("run A ended before B was checked; the test proves nothing (A exit %d)", a.code)
	}
	if b.code != 1 || !strings.Contains(b.stderr, "lock") {
		t.Errorf("run B on the same archive by a second path (exit %d) ran while run A held the archive's lock:\n%s", b.code, firstLines(b.stderr, 3))
	}
}
