package main_test

import (
	"os"
	"path/filepath"
	"testing"
)

// `--resume` takes any file of JSON lines for a journal. Given an
// export file by mistake (`--resume dlq.ndjson` where `--from-file` was
// meant: both take the ndjson file of the incident), ReadJournal finds no
// event it knows on any line, so it reads an empty journal and the run goes
// ahead as a fresh replay of the DLQ, then appends its journal events to
// the export file. The export (the operator's backup of the DLQ's bodies)
// no longer loads: `replay --from-file` stops at the first journal line
// ("no message_id"). A file with a line that is not a journal event should
// be refused before anything is sent, and never written to.
func TestResumeGivenAnExportFileRefusesAndLeavesItAlone(t *testing.T) {
	t.Parallel()
	w := seededWorld(t, 16)
	file := filepath.Join(t.TempDir(), "dlq.ndjson")
	if _, stderr, code := w.run(nil, "", "export", "--dlq", w.dlq, "--out", file, "--yes"); code != 0 {
		t.Fatalf("export: exit %d\n%s", code, stderr)
	}
	before, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	_, stderr, code := w.run(nil, "", w.replayArgs("--yes", "--resume", file, "-o", "json")...)
	after, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("exit %d\n%s", code, stderr)
	if string(after) != string(before) {
		t.Errorf("replay --resume EXPORT_FILE (exit %d) appended %d bytes of journal to the export file", code, len(after)-len(before))
	}
	if _, stderr, code := w.run(nil, "", "replay", "--from-file", file, "--queue-base-url", w.base, "--window", winStart+"/"+winEnd,
		"--codes", "1004,2003", "--dry-run"); code != 0 {
		t.Errorf("the export file no longer loads: exit %d\n%s", code, stderr)
	}
}
