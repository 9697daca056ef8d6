package historycmd

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/audit"
	"github.com/deadletter/deadletter/internal/cli/iostreams"
)

const base = "st/dead-letter-archive/audit/"

// recorded writes one run's record in a local folder; finish says whether
// it gets its finished record.
func recorded(t *testing.T, s archive.Store, reason string, items []audit.Item, finish bool) *audit.Recorder {
	t.Helper()
	ctx := context.Background()
	r, err := audit.Begin(ctx, s, base, audit.Started{Tool: "dla", Verb: "recover", Reason: reason,
		StartedAt: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)}, audit.Options{ChunkLines: 1, ChunkEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range items {
		r.Add(it)
	}
	if finish {
		if err := r.Finish(ctx, audit.Finished{Counts: map[string]int{"deleted": len(items)}}); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

func history(t *testing.T, s archive.Store, own bool) (string, string) {
	t.Helper()
	ios, _, out, errOut := iostreams.Test()
	o := &Options{}
	AddFlags(&cobra.Command{}, o)
	if err := Run(context.Background(), ios, o, time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC),
		Source{Store: s, Base: base, Where: "here", Tool: "dla", Own: own}); err != nil {
		t.Fatalf("history: %v", err)
	}
	return out.String(), errOut.String()
}

// A damaged audit folder: a chunk cut mid-line and a folder not named
// like a day are named on stderr, and the run is still listed.
func TestHistoryNamesACutChunkAndAForeignFolderAndListsTheRun(t *testing.T) {
	dir := t.TempDir()
	s, err := archive.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	r := recorded(t, s, "INC-1", []audit.Item{{Key: "k1", Action: "deleted"}, {Key: "k2", Action: "deleted"}}, false)
	chunk := filepath.Join(dir, r.Folder(), "items-000002.ndjson")
	deadline := time.Now().Add(10 * time.Second)
	for { // the second chunk is written in the background
		if _, err := os.Stat(chunk); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := os.WriteFile(chunk, []byte(`{"key":"k2","act`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, base, "not-a-day", "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, base, "not-a-day", "x", "started.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut := history(t, s, true)
	if !strings.Contains(out, "INC-1") || !strings.Contains(out, "did not finish: 1 item") {
		t.Errorf("the run is not listed with its one readable item:\n%s", out)
	}
	for _, want := range []string{"items-000002.ndjson: a line that is not an item", "not-a-day/: not a day's folder"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr does not say %q:\n%s", want, errOut)
		}
	}
	if _, errOut := history(t, s, false); strings.Contains(errOut, "not-a-day") {
		t.Errorf("a folder of a base that is not the tool's own is named:\n%s", errOut)
	}
}

// A reason with a carriage return, a vertical tab or a line separator
// stays on its run's one row when piped.
func TestPipedHistoryKeepsAReasonWithLineBreaksOnOneRow(t *testing.T) {
	s, err := archive.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	recorded(t, s, "INC-1\r\nsecond\vthird\u2028fourth\x1b[2J", []audit.Item{{Key: "k1", Action: "deleted"}}, true)
	out, _ := history(t, s, true)
	if strings.ContainsAny(out, "\r\v\f\u2028\u2029\u0085") || strings.Count(out, "\n") != 1 {
		t.Fatalf("piped history is not one row for one run: %q", out)
	}
}

// With filters that leave nothing, history says that no run matches
// them, not that none is recorded.
func TestHistoryWithFiltersThatMatchNothingSaysSoNotThatNoRunIsRecorded(t *testing.T) {
	s, err := archive.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	recorded(t, s, "INC-1", []audit.Item{{Key: "k1", Action: "deleted"}}, true)
	ios, _, _, errOut := iostreams.Test()
	o := &Options{}
	AddFlags(&cobra.Command{}, o)
	o.Verbs = []string{"migrate-legacy"}
	if err := Run(context.Background(), ios, o, time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC),
		Source{Store: s, Base: base, Where: "here", Tool: "dla"}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errOut.String(), "no recorded run matches the filters") {
		t.Fatalf("stderr: %q", errOut)
	}
}

// --limit reads the items of the runs it shows only: an older run that
// did not finish, its chunk damaged, is neither read nor named.
func TestHistoryLimitReadsTheItemsOfTheRunsItShowsOnly(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := archive.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	old, err := audit.Begin(ctx, s, base, audit.Started{Tool: "dla", Verb: "recover", StartedAt: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)},
		audit.Options{ChunkEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, old.Folder(), "items-000001.ndjson"), []byte(`{"key":"k1","act`), 0o644); err != nil {
		t.Fatal(err)
	}
	recorded(t, s, "INC-2", []audit.Item{{Key: "k2", Action: "deleted"}}, true)
	ios, _, out, errOut := iostreams.Test()
	o := &Options{}
	AddFlags(&cobra.Command{}, o)
	o.Limit = 1
	if err := Run(ctx, ios, o, time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC), Source{Store: s, Base: base, Where: "here", Tool: "dla"}); err != nil {
		t.Fatal(err)
	}
	if strings.Count(out.String(), "\n") != 1 || !strings.Contains(out.String(), "INC-2") || errOut.String() != "" {
		t.Fatalf("stdout %q, stderr %q", out, errOut)
	}
}

// A damaged record's folder named with a line break is named on one line
// of stderr, the break escaped.
func TestHistoryNamesAFolderWithALineBreakOnOneLine(t *testing.T) {
	dir := t.TempDir()
	s, err := archive.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	folder := filepath.Join(dir, base, "2026-12-01", "evil\nrun")
	if err := os.MkdirAll(folder, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(folder, "started.json"), []byte("junk"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut := history(t, s, true)
	if lines := strings.Split(strings.TrimSuffix(errOut, "\n"), "\n"); len(lines) != 2 || !strings.Contains(lines[0], `evil\nrun`) {
		t.Fatalf("stderr is not one line for the damaged record (and one for no runs): %q", errOut)
	}
}

// A run that finished with items its record could not keep says how many.
func TestTheOutcomeOfARunWithUnrecordedItemsSaysHowMany(t *testing.T) {
	r := &audit.Run{Finished: &audit.Finished{Counts: map[string]int{"deleted": 5}, Unrecorded: 3}}
	if got := Outcome(r); got != "5 deleted (3 items not in the record)" {
		t.Fatalf("outcome %q", got)
	}
}
