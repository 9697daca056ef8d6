package main_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/dla/gen"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// TestRecoverSIGTERMThenResume stops the real binary with SIGTERM part way
// through a recovery: it exits 130 with the in-flight objects finished,
// every object that left the archive has its execution in the database,
// and a second run recovers the rest.
func TestRecoverSIGTERMThenResume(t *testing.T) {
	const n = 400
	dbURL, conn, root, keys := recoverSetup(t, n, 11, 5)
	ctx := context.Background()
	args := []string{"recover", "--archive", filepath.Join(root, "demo"), "--include-legacy", "--database-url", dbURL,
		"--offline", "--yes", "--concurrency", "2", "-o", "ndjson"}

	cmd := exec.Command(dlaBin, args...)
	var stderrBuf strings.Builder
	cmd.Stderr = &stderrBuf
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	results := map[string]map[string]any{}
	var summary map[string]any
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var o map[string]any
		if err := json.Unmarshal(sc.Bytes(), &o); err != nil {
			t.Fatalf("bad ndjson line %q", sc.Text())
		}
		if o["type"] == "summary" {
			summary = o
			continue
		}
		results[o["key"].(string)] = o
		if len(results) == 40 {
			_ = cmd.Process.Signal(syscall.SIGTERM)
		}
	}
	err = cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
		t.Fatalf("after SIGTERM: %v, want exit 130", err)
	}
	if summary == nil || summary["interrupted"] != true {
		t.Fatalf("summary %v, want interrupted", summary)
	}
	gone := 0
	for _, k := range keys {
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(k))); err == nil {
			continue
		}
		gone++
		o := results[k]
		if o == nil || (o["result"] != "written" && o["result"] != "dropped") {
			t.Errorf("%s left the archive without being written: %v", k, o)
			continue
		}
		var c int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM executions WHERE arn = $1`, o["execution_arn"]).Scan(&c); err != nil || c != 1 {
			t.Errorf("%s deleted, but its execution %v is not in the database", k, o["execution_arn"])
		}
	}
	if gone == 0 || gone == n {
		t.Fatalf("%d of %d objects gone after SIGTERM: the signal did not land mid-run", gone, n)
	}
	t.Logf("SIGTERM after %d results: %d objects recovered, %d left for the re-run", len(results), gone, n-gone)

	// It says how far it got and prints the command that goes on; run as
	// printed, that command recovers the rest.
	printed := ""
	lines := strings.Split(stderrBuf.String(), "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "interrupted: ") && i+1 < len(lines) {
			printed = strings.TrimSpace(lines[i+1])
		}
	}
	if !strings.HasPrefix(printed, "dla recover ") || !strings.Contains(stderrBuf.String(), "objects processed") {
		t.Fatalf("no re-run command after the interrupt:\n%s", stderrBuf.String())
	}
	rerun := exec.Command("bash", "-c", printed)
	rerun.Env = append(os.Environ(), "PATH="+filepath.Dir(dlaBin)+":"+os.Getenv("PATH"), "AWS_EC2_METADATA_DISABLED=true")
	out, err := rerun.Output()
	if err != nil {
		t.Fatalf("the printed re-run %s: %v", printed, err)
	}
	for _, k := range keys {
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(k))); err == nil {
			t.Errorf("%s still in the archive after the re-run", k)
		}
	}
	var execs int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM executions`).Scan(&execs); err != nil || execs != n {
		t.Errorf("%d executions in the database, want %d (%v); re-run output %d bytes", execs, n, err, len(out))
	}
}

// An interrupt at the question (Ctrl-C on the terminal), before anything
// is written or moved, says that nothing changed.
func TestRecoverInterruptedAtTheQuestionSaysNothingChanged(t *testing.T) {
	dbURL, _, root, keys := recoverSetup(t, 20, 12, 2)
	r := testsupport.RunPTY(t, dlaBin, testsupport.PTY{Cols: 80, Answers: []testsupport.PTYAnswer{{Prompt: `Type "yes" to continue`, Reply: "\x03", Keys: true}}},
		"recover", "--archive", filepath.Join(root, "demo"), "--include-legacy", "--database-url", dbURL, "--offline")
	if r.Code != 130 {
		t.Fatalf("Ctrl-C at the question: exit %d, want 130\n%s", r.Code, r.Screen)
	}
	if !strings.Contains(r.Screen, "nothing changed") {
		t.Errorf("the interrupt does not say that nothing changed:\n%s", r.Screen)
	}
	for _, k := range keys {
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(k))); err != nil {
			t.Errorf("%s left the archive after an interrupt at the question", k)
		}
	}
}

// recoverSetup is a database with the reference seed, a connection to it,
// and a local archive of n generated messages (1 to maxGranules granules
// each, none malformed) with their keys.
func recoverSetup(t *testing.T, n int, seed uint64, maxGranules int) (dbURL string, conn *pgx.Conn, root string, keys []string) {
	t.Helper()
	dbURL = testsupport.NewCumulusDatabase(t, gen.ReferenceSeed())
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(ctx) })
	root = t.TempDir()
	store, err := archive.NewLocal(root)
	if err != nil {
		t.Fatal(err)
	}
	err = gen.Generate(gen.Options{Stack: "demo", Count: n, Seed: seed, MinGranules: 1, MaxGranules: maxGranules, Malformed: -1}, func(o gen.Object) error {
		keys = append(keys, o.Key)
		return store.Put(ctx, o.Key, o.Body)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dbURL, conn, root, keys
}
