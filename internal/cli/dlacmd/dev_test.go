package dlacmd

import (
	"strings"
	"testing"
)

// TestGenArchiveSummaryIsASentence pins gen-archive's last line: the
// objects it wrote by kind in words, not a Go map
// ("map[cumulus-message:3 dla-record:42 ...]", issue 38).
func TestGenArchiveSummaryIsASentence(t *testing.T) {
	dir := t.TempDir() + "/archive"
	r := run(t, false, nil, "", "dev", "gen-archive", "--out", dir, "--count", "50")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	want := "wrote 50 objects"
	if !strings.HasPrefix(r.stderr, want) || strings.Contains(r.stderr, "map[") {
		t.Fatalf("summary %q: want a sentence starting %q", r.stderr, want)
	}
	if !strings.HasSuffix(r.stderr, ": 42 DLA records, 3 raw SQS records, 3 bare Cumulus messages and 2 malformed objects (1 body not JSON, 1 empty).\n") {
		t.Errorf("summary %q does not name the kinds in words", r.stderr)
	}
	if got := describeKinds(map[string]int{"dla-record": 1, "malformed-truncated": 1, "new-kind": 2}); got != "1 DLA record, 1 malformed object (1 truncated) and 2 new-kind" {
		t.Errorf("describeKinds: %q", got)
	}
}
