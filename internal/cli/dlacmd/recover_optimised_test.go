package dlacmd

import (
	"io/fs"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/cli/cmdutil"
	"github.com/deadletter/deadletter/internal/dla/gen"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// TestRecoverOptimisedMatchesBaseline recovers the same generated archive
// (every generation and status, 3% malformed objects, 1 to 5 granules per
// message) twice, into two databases, at concurrency 1 and 4: as dla runs,
// and with every optimisation switched off (the benchmark's
// DEADLETTER_BENCH_BASELINE=all: statements one by one, every object fetched and
// decoded again after the plan, the default garbage collector). The
// object lines, the summary, every table and what is left in the archive
// (deleted, moved to failed-sqs, left) must be the same.
func TestRecoverOptimisedMatchesBaseline(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	for _, conc := range []int{1, 4} {
		t.Run("concurrency="+strconv.Itoa(conc), func(t *testing.T) {
			runStart := time.Now().Add(-time.Second)
			type outcome struct {
				lines  []string
				tables map[string][]map[string]any
				left   []string
			}
			run := func(baseline bool) outcome {
				dbURL := testsupport.NewCumulusDatabase(t, gen.ReferenceSeed())
				root := t.TempDir()
				generateInto(t, root, gen.Options{Stack: "s", Count: 400, Seed: 11, Days: 4, MinGranules: 1, MaxGranules: 5})
				args := []string{"recover", "--archive", root + "/s", "--database-url", dbURL, "--include-legacy", "--offline",
					"--yes", "--concurrency", strconv.Itoa(conc), "-o", "ndjson"}
				r := runAt(t, func() time.Time { return now }, baselineEnv(map[string]string{"DEADLETTER_NO_PROMPT": "1"}, baseline), "", args...)
				if r.code != 0 && r.code != cmdutil.ExitPartial {
					t.Fatalf("exit %d: %s", r.code, r.stderr)
				}
				var o outcome
				seconds := regexp.MustCompile(`"seconds":[0-9.e+-]+`)
				database := regexp.MustCompile(`"database":"[^"]*"`)
				for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
					l = database.ReplaceAllString(seconds.ReplaceAllString(l, `"seconds":0`), `"database":"DB"`)
					o.lines = append(o.lines, l)
				}
				sort.Strings(o.lines)
				o.tables = testsupport.DumpTables(t, dbURL, runStart)
				_ = filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
					if err == nil && !e.IsDir() && !isAuditKey(p) { // each run's own record differs
						rel, _ := filepath.Rel(root, p)
						o.left = append(o.left, rel)
					}
					return nil
				})
				sort.Strings(o.left)
				return o
			}
			opt, base := run(false), run(true)
			if a, b := strings.Join(opt.lines, "\n"), strings.Join(base.lines, "\n"); a != b {
				t.Errorf("output differs:\n optimised only\n%s\n baseline only\n%s", only(opt.lines, base.lines), only(base.lines, opt.lines))
			}
			for _, table := range []string{"executions", "pdrs", "granules", "files", "granules_executions"} {
				if a, b := testsupport.TableLines(t, opt.tables[table]), testsupport.TableLines(t, base.tables[table]); a != b {
					t.Errorf("%s differs:\n optimised\n%s\n baseline\n%s", table, a, b)
				}
			}
			if a, b := strings.Join(opt.left, "\n"), strings.Join(base.left, "\n"); a != b {
				t.Errorf("archive left differs:\n optimised\n%s\n baseline\n%s", a, b)
			}
			// The run reached what it is meant to compare.
			all := strings.Join(opt.lines, "\n")
			for _, want := range []string{`"result":"written"`, `"result":"failed"`, `"result":"unreadable"`, `"action":"moved"`, `"action":"deleted"`} {
				if !strings.Contains(all, want) {
					t.Fatalf("no object with %s:\n%s", want, all)
				}
			}
			if len(opt.tables["files"]) < 500 {
				t.Fatalf("only %d files written", len(opt.tables["files"]))
			}
		})
	}
}

// only is the lines of a that b does not hold.
func only(a, b []string) string {
	in := map[string]bool{}
	for _, l := range b {
		in[l] = true
	}
	var out []string
	for _, l := range a {
		if !in[l] {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
