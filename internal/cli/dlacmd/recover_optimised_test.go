package dlacmd

import (
	"io/fs"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/cli/cmdutil"
	"github.com/deadletter/deadletter/internal/dla/gen"
	"github.com/deadletter/deadletter/internal/testsupport"
	"github.com/deadletter/deadletter/internal/testsupport/golden"
)

// TestRecoverConcurrentMatchesConcurrencyOne recovers the same generated
// archive (every generation and status, 3% malformed objects, 1 to 5
// granules per message) twice, into two databases: at concurrency 1 and at
// recover's default concurrency (every optimisation: batches, the spool,
// messages prepared ahead, background deletes). The object lines, the
// summary, every table and what is left in the archive (deleted, moved to
// failed-sqs, left) must be those of testdata/recover_concurrency.golden.gz,
// which the concurrency-1 run writes with -update.
func TestRecoverConcurrentMatchesConcurrencyOne(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	goldenPath := testsupport.GoldenFor(t, "testdata/recover_concurrency.golden.gz")
	run := func(env map[string]string, concurrency ...string) string {
		runStart := time.Now().Add(-time.Second)
		dbURL := testsupport.NewCumulusDatabase(t, gen.ReferenceSeed())
		root := t.TempDir()
		generateInto(t, root, gen.Options{Stack: "s", Count: 400, Seed: 11, Days: 4, MinGranules: 1, MaxGranules: 5})
		args := append([]string{"recover", "--archive", root + "/s", "--database-url", dbURL, "--include-legacy", "--offline",
			"--yes", "-o", "ndjson"}, concurrency...)
		r := runAt(t, func() time.Time { return now }, env, "", args...)
		if r.code != 0 && r.code != cmdutil.ExitPartial {
			t.Fatalf("%v: exit %d: %s", concurrency, r.code, r.stderr)
		}
		var lines, left []string
		seconds := regexp.MustCompile(`"seconds":[0-9.e+-]+`)
		database := regexp.MustCompile(`"database":"[^"]*"`)
		for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
			l = database.ReplaceAllString(seconds.ReplaceAllString(l, `"seconds":0`), `"database":"DB"`)
			lines = append(lines, l)
		}
		sort.Strings(lines)
		tables := testsupport.DumpTables(t, dbURL, runStart)
		_ = filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
			if err == nil && !e.IsDir() && !isAuditKey(p) { // each run's own record differs
				rel, _ := filepath.Rel(root, p)
				left = append(left, filepath.ToSlash(rel))
			}
			return nil
		})
		sort.Strings(left)
		// The run reached what it is meant to compare.
		all := strings.Join(lines, "\n")
		for _, want := range []string{`"result":"written"`, `"result":"failed"`, `"result":"unreadable"`, `"action":"moved"`, `"action":"deleted"`} {
			if !strings.Contains(all, want) {
				t.Fatalf("%v: no object with %s:\n%s", concurrency, want, all)
			}
		}
		if len(tables["files"]) < 500 {
			t.Fatalf("%v: only %d files written", concurrency, len(tables["files"]))
		}
		return "# object lines, sorted\n" + all + "\n# left in the archive\n" + strings.Join(left, "\n") + "\n" +
			testsupport.TablesText(t, tables)
	}
	noPrompt := map[string]string{"DEADLETTER_NO_PROMPT": "1"}
	golden.Check(t, goldenPath, run(noPrompt, "--concurrency", "1"))
	golden.Match(t, goldenPath, run(noPrompt))
}
