package dlacmd

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mattn/go-runewidth"

	"github.com/deadletter/deadletter/internal/cli/cmdutil"
	"github.com/deadletter/deadletter/internal/testsupport/golden"
)

const sampleObject = sampleArchive + "/dead-letter-archive/sqs/2024-03-02/fc11c688-08b0-490f-a8c2-27af55e963d9-2c06e409-dae1-489b-84eb-e698da28bb8e"

// hostileError is an error text with a window-title and a clear-screen
// sequence, a bell and a C1 CSI.
const hostileError = "Boom\x1b]0;pwned\x07 then\x1b[2J cleared\u009b31m red"

// writeObject writes an archive object under <dir>/demo/dead-letter-archive/.
func writeObject(t *testing.T, dir, rel string, body []byte) {
	t.Helper()
	p := filepath.Join(dir, "demo", "dead-letter-archive", rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, body, 0o644); err != nil {
		t.Fatal(err)
	}
}

// sampleBody is the bytes of sampleObject.
func sampleBody(t *testing.T) []byte {
	t.Helper()
	raw, err := os.ReadFile(sampleObject)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// withError is the archived object raw with its error text set to text
// (nil: no error text at all).
func withError(t *testing.T, raw []byte, text any) []byte {
	t.Helper()
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		t.Fatal(err)
	}
	obj["error"] = text
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// escapeArchive holds one object whose error text carries terminal escape
// sequences, and one unreadable object whose key carries one.
func escapeArchive(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	writeObject(t, dir, "sqs/2024-03-02/hostile-object", withError(t, sampleBody(t), hostileError))
	writeObject(t, dir, "sqs/2024-03-02/evil\x1b[2Jkey", []byte("not json"))
	return filepath.Join(dir, "demo")
}

// rawControls lists the terminal controls of the hostile texts found in s.
func rawControls(s string) []string {
	var found []string
	for _, c := range []string{"\x1b]", "\x07", "\x1b[2J", "\u009b"} {
		if strings.Contains(s, c) {
			found = append(found, fmt.Sprintf("%q", c))
		}
	}
	return found
}

// TestArchiveTextIsEscapedOnATerminal: search, stats and show print the
// error text of an archived object; on a terminal its escape sequences
// are shown, not obeyed. Piped, the text is left exactly as stored.
func TestArchiveTextIsEscapedOnATerminal(t *testing.T) {
	archive := escapeArchive(t)
	for _, c := range []struct {
		name string
		args []string
	}{
		{"search", []string{"search", "--archive", archive}},
		{"stats", []string{"stats", "--archive", archive, "--by", "error"}},
		{"show", []string{"show", "--archive", archive, "sqs/2024-03-02/hostile-object"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, env := range []map[string]string{nil, {"NO_COLOR": "1"}} {
				r := run(t, true, env, "", c.args...)
				if r.code != 0 && r.code != cmdutil.ExitPartial {
					t.Fatalf("exit %d: %s", r.code, r.stderr)
				}
				if bad := rawControls(r.stdout); len(bad) > 0 {
					t.Errorf("terminal stdout (env %v) holds %v:\n%s", env, bad, r.stdout)
				}
				if bad := rawControls(r.stderr); len(bad) > 0 {
					t.Errorf("terminal stderr holds %v:\n%s", bad, r.stderr)
				}
				// The stats group by the error class, which masks control
				// characters (U+FFFD); search and show escape the text.
				shown := `;pwned\x07`
				if c.name == "stats" {
					shown = ";pwned\uFFFD"
				}
				if !strings.Contains(r.stdout, shown) {
					t.Errorf("the escaped error text is not shown:\n%s", r.stdout)
				}
				if env != nil && strings.Contains(r.stdout, "\x1b") {
					t.Errorf("NO_COLOR terminal output holds ESC:\n%q", r.stdout)
				}
			}
			if c.name != "show" && !strings.Contains(run(t, true, nil, "", c.args...).stderr, `evil\x1b[2Jkey`) {
				t.Error("the unreadable key with an escape is not named (escaped) on stderr")
			}
		})
	}

	// Piped: the table carries the text as stored, JSON encodes it exactly.
	r := run(t, false, nil, "", "search", "--archive", archive, "-o", "ndjson")
	var rec struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal([]byte(strings.SplitN(r.stdout, "\n", 2)[0]), &rec); err != nil || rec.Error != hostileError {
		t.Errorf("ndjson error = %q, %v; want %q", rec.Error, err, hostileError)
	}
	r = run(t, false, nil, "", "search", "--archive", archive)
	if !strings.Contains(r.stdout, "Boom\x1b]0;pwned\x07 then\x1b[2J") {
		t.Errorf("piped table altered the text:\n%q", r.stdout)
	}
	r = run(t, false, nil, "", "show", "--archive", archive, "sqs/2024-03-02/hostile-object", "-o", "json")
	var docs []showDoc
	if err := json.Unmarshal(r.stdoutBytes, &docs); err != nil || len(docs) != 1 || docs[0].Record == nil || docs[0].Record.Error == nil || *docs[0].Record.Error != hostileError {
		t.Errorf("show -o json did not keep the error text exactly (%v):\n%s", err, r.stdout)
	}
}

// TestSearchTableFitsTheTerminal: a terminal table fits the terminal's
// width, cutting the widest columns with "…" and a key too wide for its
// place to its unique tail, and its keys are relative to
// <stack>/dead-letter-archive/ (-o keys keeps the full key).
func TestSearchTableFitsTheTerminal(t *testing.T) {
	args := []string{"search", "--archive", sampleArchive, "--date", "2024-03-02"}
	r := run(t, true, map[string]string{"NO_COLOR": "1", "COLUMNS": "100"}, "", args...)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	golden.Check(t, filepath.Join("testdata", "search_table_tty_narrow.golden"), r.stdout)
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(lines) != 13 {
		t.Fatalf("%d lines, want a header and 12 rows:\n%s", len(lines), r.stdout)
	}
	for _, l := range lines {
		if w := runewidth.StringWidth(l); w > 100 {
			t.Errorf("line is %d columns wide, terminal has 100: %q", w, l)
		}
	}
	// A key wider than its place shows its unique tail, never its head:
	// every row's key can be told apart (and found by grep in -o keys).
	if !strings.Contains(r.stdout, "…") || !strings.HasPrefix(strings.TrimSpace(lines[1]), "…") || strings.Contains(r.stdout, "dead-letter-archive/") {
		t.Errorf("rows not cut, keys not shown by their tail, or keys not relative:\n%s", r.stdout)
	}
	keys := run(t, false, nil, "", append(args, "-o", "keys")...)
	if !strings.HasPrefix(keys.stdout, "demo/dead-letter-archive/sqs/2024-03-02/") {
		t.Errorf("-o keys must keep full keys: %q", keys.stdout)
	}
	// A wide terminal leaves every cell whole.
	wide := run(t, true, map[string]string{"NO_COLOR": "1", "COLUMNS": "400"}, "", args...)
	if strings.Count(wide.stdout, "…") != strings.Count(run(t, true, map[string]string{"NO_COLOR": "1"}, "", args...).stdout, "…") {
		t.Errorf("a 400-column terminal cut cells:\n%s", wide.stdout)
	}
}

// TestSummariesCountInWords: "1 match", "1 object".
func TestSummariesCountInWords(t *testing.T) {
	dir := t.TempDir()
	raw := sampleBody(t)
	writeObject(t, dir, "sqs/2024-03-02/only", raw)
	archive := filepath.Join(dir, "demo")
	r := run(t, false, nil, "", "search", "--archive", archive, "-o", "keys")
	if r.code != 0 || !strings.HasPrefix(r.stderr, "1 match, 1 object read (") {
		t.Errorf("search summary: exit %d, %q", r.code, r.stderr)
	}
	r = run(t, false, nil, "", "stats", "--archive", archive)
	if r.code != 0 || !strings.HasPrefix(r.stderr, "1 object in 1 group, 1 read from ") {
		t.Errorf("stats summary: exit %d, %q", r.code, r.stderr)
	}
	writeObject(t, dir, "sqs/2024-03-02/second", raw)
	r = run(t, false, nil, "", "search", "--archive", archive, "-o", "keys")
	if !strings.HasPrefix(r.stderr, "2 matches, 2 objects read (") {
		t.Errorf("search summary: %q", r.stderr)
	}
}

// TestIgnoreUnreadableListsAFew: with --ignore-unreadable, 12 unreadable
// objects give a count and the first 5 on stderr; -v lists all 12, and
// without the flag every one is listed (exit 3).
func TestIgnoreUnreadableListsAFew(t *testing.T) {
	dir := t.TempDir()
	raw := sampleBody(t)
	writeObject(t, dir, "sqs/2024-03-02/good", raw)
	for i := range 12 {
		writeObject(t, dir, fmt.Sprintf("sqs/2024-03-02/bad-%02d", i), []byte(`{"truncated":`))
	}
	archive := filepath.Join(dir, "demo")
	for _, verb := range []string{"search", "stats"} {
		listed := func(r runResult) int { return strings.Count(r.stderr, "dla: unreadable ") }
		r := run(t, false, nil, "", verb, "--archive", archive, "--ignore-unreadable")
		if r.code != 0 || listed(r) != 5 || !strings.Contains(r.stderr, "dla: 7 more unreadable objects not listed (-v lists every one)") ||
			!strings.Contains(r.stderr, "12 unreadable") {
			t.Errorf("%s --ignore-unreadable: exit %d, %d listed:\n%s", verb, r.code, listed(r), r.stderr)
		}
		r = run(t, false, nil, "", verb, "--archive", archive, "--ignore-unreadable", "-v")
		if r.code != 0 || listed(r) != 12 || strings.Contains(r.stderr, "more unreadable") {
			t.Errorf("%s --ignore-unreadable -v: exit %d, %d listed:\n%s", verb, r.code, listed(r), r.stderr)
		}
		r = run(t, false, nil, "", verb, "--archive", archive)
		if r.code != cmdutil.ExitPartial || listed(r) != 12 {
			t.Errorf("%s: exit %d, %d listed:\n%s", verb, r.code, listed(r), r.stderr)
		}
	}
}

// TestByteOrderMarkObjectIsReadable: an object saved with a UTF-8 BOM was
// "unreadable: invalid character 'ï'"; it is read, with a problem note.
func TestByteOrderMarkObjectIsReadable(t *testing.T) {
	dir := t.TempDir()
	raw := sampleBody(t)
	writeObject(t, dir, "sqs/2024-03-02/bom", append([]byte("\xEF\xBB\xBF"), raw...))
	archive := filepath.Join(dir, "demo")
	r := run(t, false, nil, "", "search", "--archive", archive, "-o", "keys")
	if r.code != 0 || !strings.Contains(r.stdout, "sqs/2024-03-02/bom") || strings.Contains(r.stderr, "unreadable") {
		t.Errorf("search: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = run(t, false, nil, "", "show", "--archive", archive, "sqs/2024-03-02/bom")
	if r.code != 0 || !strings.Contains(r.stdout, "starts with a UTF-8 byte-order mark") {
		t.Errorf("show: exit %d, stderr %q:\n%s", r.code, r.stderr, r.stdout)
	}
}
