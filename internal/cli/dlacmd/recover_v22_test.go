package dlacmd

// `dla recover` on a Cumulus v22 database against a second run and a
// schema newer than it knows.

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/cumulusdb"
	"github.com/deadletter/deadletter/internal/dla/gen"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// outcomesByKey runs results() over a recover's ndjson: key -> result.
func outcomesByKey(t *testing.T, stdout string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, o := range results(t, stdout) {
		if o["type"] != "object" {
			continue
		}
		key, _ := o["key"].(string)
		res, _ := o["result"].(string)
		if res == "failed" || res == "left" {
			res += ": " + fmt.Sprint(o["error"])
		}
		out[key] = res
	}
	return out
}

// Concurrency: two `dla recover` runs of two copies of one
// archive (two archives, so two locks) into one v22 database at once write
// the same executions, granules and files side by side; the guard tables'
// unique violations of that race are retried, never reported. Each run's
// outcome for every object equals that of a run alone.
func TestV22TwoRecoversOfTheSameMessagesAtOnce(t *testing.T) {
	const n = 150
	alone := localGeneratedArchive(t, n)
	a, b := localGeneratedArchive(t, n), localGeneratedArchive(t, n)
	run := func(url, archive string) runResult {
		return runAt(t, time.Now, map[string]string{"DEADLETTER_NO_PROMPT": "1"}, "", "recover", "--archive", archive,
			"--database-url", url, "--offline", "--yes", "--concurrency", "8", "-o", "ndjson")
	}
	base := run(testsupport.NewCumulusDatabaseOf(t, cumulusdb.V22_3, gen.ReferenceSeed()), alone)
	want := outcomesByKey(t, base.stdout)
	if len(want) == 0 {
		t.Fatalf("the run alone gave no result: exit %d\n%s", base.code, base.stderr)
	}
	url := testsupport.NewCumulusDatabaseOf(t, cumulusdb.V22_3, gen.ReferenceSeed())
	var wg sync.WaitGroup
	rs := make([]runResult, 2)
	for i, dir := range []string{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rs[i] = run(url, dir)
		}()
	}
	wg.Wait()
	for i, r := range rs {
		if r.code != base.code {
			t.Errorf("run %d: exit %d, alone %d\n%s", i, r.code, base.code, lastLines(r.stderr, 5))
		}
		got := outcomesByKey(t, r.stdout)
		var diffs []string
		for k, w := range want {
			if g := got[k]; g != w {
				diffs = append(diffs, fmt.Sprintf("%s: %q, alone %q", k, g, w))
			}
		}
		sort.Strings(diffs)
		if len(diffs) > 0 {
			t.Errorf("run %d: %d outcomes differ from the run alone, e.g.\n%s", i, len(diffs), strings.Join(diffs[:min(5, len(diffs))], "\n"))
		}
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// A v22 database with a NOT NULL column the writes do not name (a newer
// Cumulus migration) would fail every granule insert with 23502, and no
// message could pass it: recover refuses the schema before anything moves
// (Detect), and were the column added mid-run, the first such write would
// stop the run with every object in place (ErrorOwner).
func TestV22RecoverRefusesASchemaNewerThanItKnowsBeforeMovingAnything(t *testing.T) {
	archiveDir := localGeneratedArchive(t, 12)
	before := treeDigest(t, archiveDir)
	url := testsupport.NewCumulusDatabaseOf(t, cumulusdb.V22_3, gen.ReferenceSeed())
	testsupport.ExecSQL(t, url, `ALTER TABLE granules ADD COLUMN mission text NOT NULL`)
	r := runAt(t, time.Now, map[string]string{"DEADLETTER_NO_PROMPT": "1"}, "", "recover", "--archive", archiveDir,
		"--database-url", url, "--offline", "--yes", "--concurrency", "1", "-o", "ndjson")
	after := treeDigest(t, archiveDir)
	var moved []string
	for k := range after {
		if strings.Contains(k, "/failed-sqs/") {
			if _, was := before[k]; !was {
				moved = append(moved, k)
			}
		}
	}
	if len(moved) > 0 {
		t.Fatalf("exit %d: %d of %d objects moved to failed-sqs/ for the database's schema, e.g. %s\n%s",
			r.code, len(moved), len(before), moved[0], lastLines(r.stderr, 3))
	}
	if r.code != 2 || !strings.Contains(r.stderr, "NOT NULL column granules.mission without a default, which no write of dla fills") {
		t.Fatalf("exit %d, want 2 and the column named:\n%s", r.code, r.stderr)
	}
}
