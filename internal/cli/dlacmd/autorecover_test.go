package dlacmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

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
