package main_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deadletter/deadletter/internal/testsupport"
)

// TestClosedStdoutStopsPrintingNotSafety: `dla recover -o ndjson | head -1`.
// The reader goes away after one line; dla is not killed by SIGPIPE (exit
// 141, between a write and its delete): it stops starting objects, finishes
// those in flight, says so on stderr and exits 1. Every object that left the
// archive was written; the rest are where they were.
func TestClosedStdoutStopsPrintingNotSafety(t *testing.T) {
	const n = 300
	dbURL, conn, root, keys := recoverSetup(t, n, 5, 3)
	ctx := context.Background()
	cmd := exec.Command(dlaBin, "recover", "--archive", filepath.Join(root, "demo"), "--include-legacy", "--database-url", dbURL,
		"--offline", "--yes", "--concurrency", "2", "-o", "ndjson")
	line, stderr, state := testsupport.HeadOne(t, cmd, nil)
	var first map[string]any
	if err := json.Unmarshal([]byte(line), &first); err != nil {
		t.Fatalf("first line %q: %v", line, err)
	}
	if state.ExitCode() != 1 {
		t.Fatalf("after stdout closed: %s (exit code %d, -1 means killed by a signal), want exit 1; stderr:\n%s", state, state.ExitCode(), stderr)
	}
	if !strings.Contains(stderr, "stdout was closed") {
		t.Errorf("stderr does not say stdout was closed:\n%s", stderr)
	}
	gone := 0
	for _, k := range keys {
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(k))); err == nil {
			continue
		}
		gone++
	}
	var execs int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM executions`).Scan(&execs); err != nil {
		t.Fatal(err)
	}
	if gone == 0 || gone == n {
		t.Fatalf("%d of %d objects gone: the closed stdout did not stop the run part way (or nothing ran)", gone, n)
	}
	// Every object gone from the archive was written (each message is one
	// execution, so the executions count at least the objects deleted).
	if execs < gone {
		t.Errorf("%d objects deleted but only %d executions written", gone, execs)
	}
	t.Logf("stdout closed after one line: %d objects recovered and deleted, %d executions, %d left in place", gone, execs, n-gone)
}
