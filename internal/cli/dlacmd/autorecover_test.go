package dlacmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/deadletter/deadletter/internal/testsupport/fakeathena"
	"github.com/deadletter/deadletter/internal/workflow/autorecover"
)

const refusedDatabase = "postgres://postgres@127.0.0.1:1/cumulus?connect_timeout=2"

// A dry run from a terminal's point of view during an outage: the report
// names each group's decision, the transient ones wait for the database,
// and nothing is written, recorded or moved.
func TestAutorecoverDryRunDuringAnOutageReportsAndChangesNothing(t *testing.T) {
	dir := t.TempDir()
	archiveDir := filepath.Join(dir, "demo")
	if err := os.CopyFS(archiveDir, os.DirFS(sampleArchive)); err != nil {
		t.Fatal(err)
	}
	before := treeOf(t, archiveDir)
	r := run(t, false, nil, "", "autorecover", "--archive", archiveDir, "--dry-run", "--offline", "--database-url", refusedDatabase, "-o", "json")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	var rep autorecover.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || rep.Schema != autorecover.ReportSchema {
		t.Fatalf("stdout is not the report (%v):\n%s", err, r.stdout)
	}
	decisions := map[autorecover.Decision]int{}
	for _, g := range rep.Groups {
		decisions[g.Decision]++
		if g.Decision == autorecover.Try && (g.Probe == nil || g.Probe.Outcome != autorecover.ProbeEnvironment) {
			t.Errorf("a tried group during an outage: %+v", g.Probe)
		}
	}
	if rep.Objects == 0 || decisions[autorecover.Try] == 0 || decisions[autorecover.Person] == 0 || rep.Readiness == "" || rep.Audit != "" {
		t.Errorf("report: %d objects, decisions %v, readiness %q, record %q", rep.Objects, decisions, rep.Readiness, rep.Audit)
	}
	if after := treeOf(t, archiveDir); !reflect.DeepEqual(after, before) {
		t.Errorf("a dry run changed the archive:\n%s\nwas\n%s", after, before)
	}
}

// Recover mode without a terminal and without --yes changes nothing and
// says why.
func TestAutorecoverRecoverModeNeedsYesWithoutATerminal(t *testing.T) {
	r := run(t, false, nil, "", "autorecover", "--archive", sampleArchive, "--mode", "recover", "--database-url", refusedDatabase)
	if r.code != 2 || !strings.Contains(r.stderr, "--yes") {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
	if r := run(t, false, nil, "", "autorecover", "--archive", sampleArchive, "--mode", "fix"); r.code != 2 || !strings.Contains(r.stderr, "want report or recover") {
		t.Errorf("--mode fix: exit %d, stderr %q", r.code, r.stderr)
	}
}

// With --engine athena a pass counts the lookback with Athena's triage
// query: the same groups and decisions as a pass that reads every object
// (the unreadable objects aside: they are not in the Glue table), and the
// report says which engine counted and what its query scanned.
func TestAutorecoverWithAthenaCountsAsAPassThatReadsEveryObject(t *testing.T) {
	e := newAthenaEnv(t)
	archiveURL := "s3://" + e.bucket + "/demo"
	rows := e.triageRows(t, archiveURL)
	between := regexp.MustCompile(`eventdate BETWEEN '([0-9-]+)' AND '([0-9-]+)'`)
	e.plan = func(sql string) fakeathena.Execution {
		if !strings.Contains(sql, "GROUP BY error, collectionid, providerid, eventdate") {
			t.Errorf("a dry run ran another query than triage's:\n%s", sql)
		}
		m := between.FindStringSubmatch(sql)
		if m == nil {
			t.Fatalf("no dates in the query:\n%s", sql)
		}
		ex := rows
		ex.Rows = nil
		for _, r := range rows.Rows {
			if d := *r[3]; d >= m[1] && d <= m[2] {
				ex.Rows = append(ex.Rows, r)
			}
		}
		return ex
	}
	args := []string{"autorecover", "--archive", archiveURL, "--dry-run", "--offline", "--database-url", refusedDatabase, "--lookback", "5", "-o", "json"}
	reports := map[string]autorecover.Report{}
	for _, engine := range []string{"local", "athena"} {
		r := run(t, false, nil, "", append(args, "--engine", engine)...)
		var rep autorecover.Report
		if err := json.Unmarshal([]byte(r.stdout), &rep); r.code != 0 || err != nil {
			t.Fatalf("--engine %s: exit %d (%v)\n%s\n%s", engine, r.code, err, r.stdout, r.stderr)
		}
		reports[engine] = rep
	}
	local, athena := reports["local"], reports["athena"]
	if athena.Engine != "athena" || local.Engine != "local" || len(athena.Queries) != 1 || athena.Queries[0].ScannedBytes != 5<<20 {
		t.Errorf("engines %q and %q; queries %+v", local.Engine, athena.Engine, athena.Queries)
	}
	var want []autorecover.GroupReport
	for _, g := range local.Groups {
		if g.ErrorClass != nil {
			want = append(want, g)
		}
	}
	if len(athena.Groups) != len(want) || len(want) == 0 {
		t.Fatalf("athena: %d groups; local: %d readable ones", len(athena.Groups), len(want))
	}
	for i, g := range athena.Groups {
		w := want[i]
		if *g.ErrorClass != *w.ErrorClass || g.Count != w.Count || g.Decision != w.Decision || !reflect.DeepEqual(g.Command, w.Command) {
			t.Errorf("group %d:\nathena %+v\nlocal  %+v", i, g, w)
		}
	}
	if len(e.fake.Started()) != 1 {
		t.Errorf("%d queries, want triage's alone", len(e.fake.Started()))
	}
	for _, bad := range [][]string{
		{"autorecover", "--archive", sampleArchive, "--engine", "athena", "--dry-run"},
		{"autorecover", "--archive", archiveURL, "--max-scan-bytes", "1GB", "--dry-run"},
		{"autorecover", "--archive", archiveURL, "--engine", "glue", "--dry-run"},
	} {
		if r := run(t, false, nil, "", bad...); r.code != 2 {
			t.Errorf("%v: exit %d, want a usage error: %s", bad, r.code, r.stderr)
		}
	}
}
