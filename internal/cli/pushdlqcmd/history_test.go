package pushdlqcmd

import (
	"os"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/testsupport"
)

// history runs pushdlq history on the world's state directory.
func (w *auditWorld) history(args ...string) (code int, stdout, stderr string) {
	w.t.Helper()
	return w.cli(append([]string{"history"}, args...)...)
}

// pushdlq history lists the replays newest first as deadletter.history/v1
// lines, piped as tab-separated rows, and --notification and --message-id
// narrow it to the runs that touched that record, with its items. Before
// any run, it says there is none, and creates nothing.
func TestHistoryListsTheReplaysAndWhatEachDidToANotification(t *testing.T) {
	testsupport.SetAWSEnv(t, nil)
	w := newAuditWorld(t, 8)
	if code, stdout, stderr := w.history(); code != 0 || stdout != "" || !strings.Contains(stderr, "no runs recorded at ") {
		t.Fatalf("before any run: exit %d, %q, %q", code, stdout, stderr)
	}
	if _, err := os.Stat(w.state + "/audit"); !os.IsNotExist(err) {
		t.Errorf("history created the audit directory: %v", err)
	}
	if code, _, stderr := w.replay("--reason", "INC-1", "--max", "2"); code != 0 {
		t.Fatalf("first replay: exit %d\n%s", code, stderr)
	}
	if code, _, stderr := w.replay("--reason", "INC-2"); code != 0 {
		t.Fatalf("second replay: exit %d\n%s", code, stderr)
	}
	code, stdout, stderr := w.history("-o", "ndjson")
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if code != 0 || len(lines) != 2 {
		t.Fatalf("exit %d, %d lines, want 2:\n%s\n%s", code, len(lines), stdout, stderr)
	}
	for i, want := range []string{"INC-2", "INC-1"} { // newest first
		l := lines[i]
		if gjson.Get(l, "schema").String() != "deadletter.history/v1" || gjson.Get(l, "reason").String() != want ||
			gjson.Get(l, "verb").String() != "replay" || !gjson.Get(l, "finished").Bool() || gjson.Get(l, "exit_code").Int() != 0 ||
			gjson.Get(l, "target.dlq").String() != w.dlq || gjson.Get(l, "items").Exists() {
			t.Errorf("line %d: %s", i, l)
		}
	}
	if gjson.Get(lines[1], "counts.replayed").Int() != 2 || gjson.Get(lines[0], "counts.replayed").Int() != 4 {
		t.Errorf("counts: %s / %s", gjson.Get(lines[0], "counts"), gjson.Get(lines[1], "counts"))
	}

	// The first run replayed n-0 and n-1 (--max 2), the second the rest.
	code, stdout, _ = w.history("--notification", "n-1", "-o", "ndjson")
	if code != 0 || strings.Count(stdout, "\n") != 1 || gjson.Get(stdout, "reason").String() != "INC-1" ||
		gjson.Get(stdout, "items.#").Int() != 1 || gjson.Get(stdout, "items.0.action").String() != "replayed" {
		t.Errorf("--notification n-1: exit %d\n%s", code, stdout)
	}
	code, stdout, _ = w.history("--message-id", w.ids[3], "-o", "ndjson") // code 1001, released; the first run stopped before it
	if code != 0 || strings.Count(stdout, "\n") != 1 || gjson.Get(stdout, "items.0.action").String() != "released" {
		t.Errorf("--message-id: exit %d\n%s", code, stdout)
	}
	code, stdout, stderr = w.history("--notification", "n-404")
	if code != 0 || stdout != "" || !strings.Contains(stderr, "no recorded run touched notification n-404") {
		t.Errorf("an unknown notification: exit %d %q %q", code, stdout, stderr)
	}
	code, stdout, _ = w.history("--verb", "replay")
	rows := strings.Split(strings.TrimSpace(stdout), "\n")
	if code != 0 || len(rows) != 2 || !strings.Contains(rows[0], "\tINC-2\treplay ") || !strings.Contains(rows[1], "\tINC-1\treplay ") {
		t.Errorf("the piped table: exit %d\n%s", code, stdout)
	}
	if code, _, stderr := w.history("--notification", "a", "--message-id", "b"); code != 2 {
		t.Errorf("both record filters: exit %d, want 2\n%s", code, stderr)
	}
}
