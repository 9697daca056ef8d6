package main_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/deadletter/deadletter/internal/dla/gen"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// The tests of this file run each verb as an operator does, on a terminal
// (a pseudo-terminal of 80, 120 and 200 columns, TERM=xterm-256color), and
// check what the terminal shows: no escape sequence printed as text, no
// line wider than the terminal unless it is a command to copy (or holds a
// key, an ARN or a URL that cannot be cut), colour where it belongs and none
// with NO_COLOR=1, TERM=dumb or on the data of a pipe (issue 31 item 2).

// copyOfSample is a copy of the sample archive, for the verbs that move or
// delete objects.
func copyOfSample(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "demo")
	if out, err := exec.Command("cp", "-r", sample, dir).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v: %s", err, out)
	}
	return dir
}

// sampleKey is the key of one object of the sample archive's 2024-03-02.
func sampleKey(t *testing.T) string {
	t.Helper()
	names, err := os.ReadDir(filepath.Join(sample, "dead-letter-archive", "sqs", "2024-03-02"))
	if err != nil || len(names) == 0 {
		t.Fatalf("the sample archive's 2024-03-02: %v", err)
	}
	return "sqs/2024-03-02/" + names[0].Name()
}

var confirmYes = []testsupport.PTYAnswer{{Prompt: "to continue:", Reply: "yes"}}

func dlaVerbs() []testsupport.PTYVerb {
	var probeDB string // the database of the probe's last run, for its Check
	fixed := func(args ...string) func(*testing.T) ([]string, []testsupport.PTYAnswer) {
		return func(*testing.T) ([]string, []testsupport.PTYAnswer) { return args, nil }
	}
	return []testsupport.PTYVerb{
		{Name: "search", Run: fixed("search", "--archive", sample, "--include-legacy", "--ignore-unreadable"), Codes: []int{0}, Colour: true},
		{Name: "search-one-day", Run: fixed("search", "--archive", sample, "--date", "2024-03-02"), Codes: []int{0}, Colour: true},
		{Name: "show", Run: func(t *testing.T) ([]string, []testsupport.PTYAnswer) {
			return []string{"show", "--archive", sample, sampleKey(t)}, nil
		}, Codes: []int{0}, Colour: true},
		{Name: "stats", Run: fixed("stats", "--archive", sample, "--by", "error", "--ignore-unreadable"), Codes: []int{0}, Colour: true},
		{Name: "stats-collection", Run: fixed("stats", "--archive", sample, "--by", "collection", "--ignore-unreadable"), Codes: []int{0}, Colour: true},
		{Name: "triage", Run: fixed(triageArgs...), Codes: []int{0}, Colour: true, Check: checkTriageScreen},
		// issue 38 item 1: a database that cannot be reached (a real
		// closed port) leaves every group printed, says why readiness was
		// not checked, and exits 3.
		{Name: "triage-unreachable-database", Run: func(t *testing.T) ([]string, []testsupport.PTYAnswer) {
			return append(slices.Clone(triageArgs), "--database-url", "postgres://cumulus@"+testsupport.ClosedPort(t)+"/cumulus"), nil
		}, Codes: []int{3}, Colour: true, Check: func(t *testing.T, r testsupport.PTYResult) {
			checkTriageScreen(t, r)
			if !strings.Contains(r.Screen, "readiness not checked: cannot connect to PostgreSQL at 127.0.0.1:") ||
				!strings.Contains(r.Screen, "71 objects in 8 groups") {
				t.Errorf("%d columns: no groups, or no reason readiness was not checked:\n%s", r.Cols, r.Screen)
			}
			if r.Cols == 80 {
				t.Logf("the screen at 80 columns:\n%s", plainScreen(r.Screen))
			}
		}},
		// issue 38 item 2: a permanent group whose probe would write
		// every object shows one verdict, "would be written now: retry",
		// with recover's dry run, which run through bash -c writes them.
		{Name: "triage-probe-contradicts-rule", Run: func(t *testing.T) ([]string, []testsupport.PTYAnswer) {
			probeDB = testsupport.NewCumulusDatabase(t, gen.ReferenceSeed())
			return []string{"triage", "--archive", probeContradictsArchive(t), "--database-url", probeDB, "--probe", "3"}, nil
		}, Codes: []int{0}, Colour: true, Check: func(t *testing.T, r testsupport.PTYResult) { checkProbeContradictsScreen(t, r, probeDB) }},
		{Name: "report", Run: func(t *testing.T) ([]string, []testsupport.PTYAnswer) {
			return []string{"report", "--archive", sample, "--out", filepath.Join(t.TempDir(), "report.html")}, nil
		}, Codes: []int{0}},
		{Name: "recover", Run: func(t *testing.T) ([]string, []testsupport.PTYAnswer) {
			db := testsupport.NewCumulusDatabase(t, gen.ReferenceSeed())
			return []string{"recover", "--archive", copyOfSample(t), "--include-legacy", "--offline", "--database-url", db}, confirmYes
		}, Codes: []int{0, 3}, Check: func(t *testing.T, r testsupport.PTYResult) {
			for _, want := range []string{"Type \"yes\" to continue", "written"} { // the plan, then the run and its summary
				if !strings.Contains(r.Screen, want) {
					t.Errorf("recover's screen lacks %q", want)
				}
			}
		}},
		{Name: "recover-dry-run", Run: func(t *testing.T) ([]string, []testsupport.PTYAnswer) {
			db := testsupport.NewCumulusDatabase(t, gen.ReferenceSeed())
			return []string{"recover", "--archive", sample, "--include-legacy", "--offline", "--database-url", db, "--dry-run"}, nil
		}, Codes: []int{0, 3}},
		{Name: "trace", Run: func(t *testing.T) ([]string, []testsupport.PTYAnswer) {
			db := testsupport.NewCumulusDatabase(t, gen.ReferenceSeed())
			return []string{"trace", "--archive", sample, "--offline", "--database-url", db, "--ignore-unreadable",
				"--granule", "MOD09GQ.A2023111.h06v07.006.2024248749933", "--granule", "NOT.IN.THE.ARCHIVE"}, nil
		}, Codes: []int{0}, Colour: true, Check: func(t *testing.T, r testsupport.PTYResult) {
			for _, want := range []string{"decides it:", "not in the archive: no write of it failed"} {
				if !strings.Contains(r.Screen, want) {
					t.Errorf("%d columns: trace's screen lacks %q", r.Cols, want)
				}
			}
		}},
		{Name: "migrate-legacy", Run: func(t *testing.T) ([]string, []testsupport.PTYAnswer) {
			return []string{"migrate-legacy", "--archive", copyOfSample(t), "--offline"}, confirmYes
		}, Codes: []int{0}, Check: func(t *testing.T, r testsupport.PTYResult) {
			if !strings.Contains(r.Screen, "moved") {
				t.Error("migrate-legacy moved nothing")
			}
		}},
	}
}

var triageArgs = []string{"triage", "--archive", sample, "--ignore-unreadable"}

// probeContradictsArchive holds 3 copies of an object of the sample that
// recover writes now into a database with the reference seed, its error
// text a schema violation: the rule says never as it is.
func probeContradictsArchive(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(sample, "dead-letter-archive", "sqs", "2024-03-02",
		"fc11c688-08b0-490f-a8c2-27af55e963d9-2c06e409-dae1-489b-84eb-e698da28bb8e"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	m["error"] = `AggregateError: SchemaValidationError: The record has validation errors: [{"keyword":"type","dataPath":".duration","message":"should be number"}]`
	b, _ := json.Marshal(m)
	archive := filepath.Join(t.TempDir(), "demo")
	dir := filepath.Join(archive, "dead-letter-archive", "sqs", "2024-03-02")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := os.WriteFile(filepath.Join(dir, "contradicted-"+strconv.Itoa(i)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return archive
}

// plainScreen is what the terminal shows, without its colours.
func plainScreen(screen string) string {
	var lines []string
	for _, l := range testsupport.ScreenLines(screen) {
		lines = append(lines, l.Plain)
	}
	return strings.Join(lines, "\n")
}

// checkProbeContradictsScreen: the group's one verdict, its badge, the
// summary's advice and its command follow the probe, and the command as
// the terminal shows it, run through bash -c against the database, would
// write all three.
func checkProbeContradictsScreen(t *testing.T, r testsupport.PTYResult, db string) {
	t.Helper()
	plain := plainScreen(r.Screen)
	for _, want := range []string{"3 objects in 1 group: 3 transient", "first: retry 3 objects now (1 group)",
		"would be written now: retry (probe: 3 of 3;"} {
		if !strings.Contains(plain, want) {
			t.Errorf("%d columns: the screen lacks %q:\n%s", r.Cols, want, plain)
		}
	}
	if strings.Contains(plain, "permanent") && !strings.Contains(plain, "says never as it is") || strings.Contains(plain, "dla search ") {
		t.Errorf("%d columns: two verdicts for one group:\n%s", r.Cols, plain)
	}
	if r.Cols == 80 {
		t.Logf("the screen at 80 columns:\n%s", plain)
	}
	command := ""
	for _, l := range strings.Split(plain, "\n") {
		if c := strings.TrimSpace(l); strings.HasPrefix(c, "dla recover ") {
			command = c
		}
	}
	if !strings.HasSuffix(command, " --dry-run") || !testsupport.CommandOnItsOwnLine(r.Screen, command) {
		t.Fatalf("%d columns: no recover --dry-run whole on a line of its own:\n%s", r.Cols, plain)
	}
	if r.Cols != 80 {
		return // once is enough for the command
	}
	cmd := exec.Command("bash", "-c", command+" --offline -o ndjson")
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(dlaBin)+":"+os.Getenv("PATH"), "DATABASE_URL="+db, "AWS_EC2_METADATA_DISABLED=true")
	out, err := cmd.Output()
	if err != nil || strings.Count(string(out), `"result":"written"`) != 3 {
		t.Errorf("%s: %v, want 3 written:\n%s", command, err, out)
	}
}

// checkTriageScreen pins issue 31's bar for triage on a terminal: each
// group's next command (as -o json gives it) on a line of its own, whole.
func checkTriageScreen(t *testing.T, r testsupport.PTYResult) {
	t.Helper()
	out, stderr, _ := dla(t, nil, "", append(triageArgs, "-o", "json")...)
	var report struct {
		Groups []struct {
			Class   string `json:"class"`
			Command string `json:"command"`
		} `json:"groups"`
	}
	if err := json.Unmarshal([]byte(out), &report); err != nil || len(report.Groups) == 0 {
		t.Fatalf("triage -o json: %v: %s", err, stderr)
	}
	for _, g := range report.Groups {
		if !testsupport.CommandOnItsOwnLine(r.Screen, g.Command) {
			t.Errorf("%d columns: the %s group's command is not whole on a line of its own: %s", r.Cols, g.Class, g.Command)
		}
	}
}

func TestEveryVerbOnATerminal(t *testing.T) {
	for _, v := range dlaVerbs() {
		t.Run(v.Name, func(t *testing.T) {
			t.Parallel()
			testsupport.RunOnTerminals(t, dlaBin, v)
		})
	}
}

// With stdout piped (`dla triage | less`) and stderr on the terminal, the
// summary dla triage writes to stderr is fitted to the terminal's width.
// It was folded to stdout's width, which a pipe does not have: always 80
// columns, so on a 200-column terminal it broke in two for nothing, and
// on a 40-column one it ran past the edge. A word no line can hold (the
// archive's path, as deep as the checkout is) stays whole on a line of
// its own.
func TestTriageSummaryOnStderrFitsTheTerminalWhenStdoutIsPiped(t *testing.T) {
	for _, cols := range []int{40, 200} {
		r := testsupport.RunPTY(t, dlaBin, testsupport.PTY{Cols: cols, PipeStdout: true}, triageArgs...)
		if r.Code != 0 {
			t.Fatalf("exit %d:\n%s", r.Code, r.Screen)
		}
		var summary []testsupport.ScreenLine
		for _, l := range testsupport.ScreenLines(r.Screen) {
			if strings.HasPrefix(l.Plain, "71 objects in 8 groups") || (len(summary) > 0 && strings.HasPrefix(l.Plain, "  ")) {
				summary = append(summary, l)
			}
		}
		if len(summary) == 0 {
			t.Fatalf("%d columns: no summary on the terminal:\n%s", cols, r.Screen)
		}
		for _, l := range summary {
			if l.Width > cols && !testsupport.HoldsOneUncuttableWord(l.Plain, cols) {
				t.Errorf("%d columns: the summary runs past the edge (%d columns): %q", cols, l.Width, l.Plain)
			}
		}
		if cols == 200 && len(summary) != 1 {
			t.Errorf("200 columns: the summary (under 200 columns) is folded into %d lines: %q", len(summary), summary[0].Plain)
		}
	}
}

// Archived text that would drive a terminal (a clear-screen, a window
// title, an OSC 8 hyperlink, a bidi override, C1 CSI, a carriage return)
// in error texts and keys: dla triage on a terminal shows it escaped, so
// that the terminal receives no sequence but the tool's own colours, and
// each group's command (as -o json gives it) is still whole on a line of
// its own. The other tests of this file run the sample archive, which
// holds no such text.
func TestTriageOfAHostileArchiveOnATerminal(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(sample, "dead-letter-archive", "sqs", "2024-03-02",
		"49373414-fb81-4e23-8da5-91186042e9bf-cacb018c-3384-4861-9511-6bd766e32aef"))
	if err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(t.TempDir(), "demo")
	for i, c := range []struct{ key, errText string }{
		{"k1", "KnexTimeoutError: evil \x1b[2J\x1b]0;pwned\x07 clear"},
		{"k2", "TypeError: link \x1b]8;;http://evil.example/\x1b\\click\x1b]8;;\x1b\\ here"},
		{"k3", "RangeError: bidi \u202egnp.exe\u202c csi \u009b2J cr\rover"},
		{"k\u202egnp.txt", "SyntaxError: key with a bidi override"},
		{"k\x1b]8;;x\x1b\\y", "URIError: key with a hyperlink"},
		// The verdict names the provider, taken from the error text.
		{"k4", `AggregateError: RecordDoesNotExist: Record in providers with identifiers {"name":"P\u001b[2J\u001b]0;x\u0007"} does not exist.`},
	} {
		var m map[string]any
		if err := json.Unmarshal(src, &m); err != nil {
			t.Fatal(err)
		}
		m["error"] = c.errText
		b, _ := json.Marshal(m)
		dir := filepath.Join(archive, "dead-letter-archive", "sqs", "2024-03-0"+strconv.Itoa(1+i%2))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, c.key), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"triage", "--archive", archive}
	out, stderr, _ := dla(t, nil, "", append(args, "-o", "json")...)
	var report struct {
		Groups []struct{ Command string } `json:"groups"`
	}
	if err := json.Unmarshal([]byte(out), &report); err != nil || len(report.Groups) == 0 {
		t.Fatalf("triage -o json: %v: %s", err, stderr)
	}
	for _, cols := range []int{80, 200} {
		r := testsupport.RunPTY(t, dlaBin, testsupport.PTY{Cols: cols}, args...)
		if r.Code != 0 {
			t.Fatalf("exit %d:\n%s", r.Code, r.Screen)
		}
		// What the terminal receives once the tool's own colours and the
		// progress line's erase (iostreams' status line) are taken out: no
		// control but line ends (\r is the terminal's own newline).
		rest := regexp.MustCompile("\x1b\\[[0-9;]*m").ReplaceAllString(strings.ReplaceAll(r.Screen, "\r\x1b[2K\x1b[1A\x1b[2K", ""), "")
		for _, bad := range []string{"\x1b", "\x07", "\u009b", "\u202e", "\u202c"} {
			if strings.Contains(rest, bad) {
				t.Errorf("%d columns: the terminal received %q from archived text:\n%q", cols, bad, r.Screen)
			}
		}
		for _, g := range report.Groups {
			if !testsupport.CommandOnItsOwnLine(r.Screen, g.Command) {
				t.Errorf("%d columns: the command is not whole on a line of its own: %s", cols, g.Command)
			}
		}
	}
}

// Issue 38 item 7: at 80 columns every key of dla search's table was cut to
// "sqs/2024-03…", and at 200 still cut, so no row could be told apart or
// copied. At 200 columns each key is whole (and copies into dla show); at
// 80 each row shows a tail of its key that no other key ends with; stderr
// says what was left out, and -o wide shows every column whole.
func TestSearchOnATerminalKeepsEachKeyWholeOrItsUniqueTail(t *testing.T) {
	args := []string{"search", "--archive", sample, "--include-legacy", "--ignore-unreadable"}
	out, stderr, code := dla(t, nil, "", append(args, "-o", "keys")...)
	if code != 0 {
		t.Fatalf("-o keys: exit %d: %s", code, stderr)
	}
	keys := strings.Fields(out)
	const root = "demo/dead-letter-archive/"
	rowsOf := func(r testsupport.PTYResult) []string {
		var cells []string
		for _, l := range testsupport.ScreenLines(r.Screen) {
			if f := strings.Fields(l.Plain); len(f) > 1 && (strings.HasPrefix(f[0], "…") || strings.HasPrefix(f[0], "sqs/") || strings.HasPrefix(f[0], "20")) {
				cells = append(cells, f[0])
			}
		}
		return cells
	}
	for _, cols := range []int{80, 200} {
		r := testsupport.RunPTY(t, dlaBin, testsupport.PTY{Cols: cols, Rows: 120}, args...)
		if r.Code != 0 {
			t.Fatalf("%d columns: exit %d:\n%s", cols, r.Code, r.Screen)
		}
		testsupport.CheckScreen(t, "dla search", r)
		cells := rowsOf(r)
		if len(cells) != len(keys) {
			t.Fatalf("%d columns: %d rows for %d keys:\n%s", cols, len(cells), len(keys), r.Screen)
		}
		for i, cell := range cells {
			var ends []string
			tail, cut := strings.CutPrefix(cell, "…")
			for _, k := range keys {
				if strings.HasSuffix(k, tail) {
					ends = append(ends, k)
				}
			}
			switch {
			case cols == 200 && (cut || root+cell != keys[i]):
				t.Errorf("200 columns: row %d shows %q, not its whole key %s", i+1, cell, strings.TrimPrefix(keys[i], root))
			case len(ends) != 1 || ends[0] != keys[i]:
				t.Errorf("%d columns: row %d's %q ends %d keys (%v), want only %s", cols, i+1, cell, len(ends), ends, keys[i])
			}
		}
		if cols == 80 && !strings.Contains(r.Screen, "fitted to 80 columns: keys shown by their unique tail") {
			t.Errorf("80 columns: stderr does not say the keys are cut:\n%s", r.Screen)
		}
		if cols == 200 && !strings.Contains(r.Screen, "ERROR") {
			t.Errorf("200 columns: the error column is left out:\n%s", r.Screen)
		}
	}
	r := testsupport.RunPTY(t, dlaBin, testsupport.PTY{Cols: 80, Rows: 120}, append(args, "-o", "wide")...)
	for _, want := range []string{"DATE", "GRANULES", "COLLECTION", "STATUS", strings.TrimPrefix(keys[0], root)} {
		if !strings.Contains(r.Screen, want) {
			t.Errorf("-o wide at 80 columns lacks %q:\n%s", want, r.Screen)
		}
	}
	if strings.Contains(r.Screen, "fitted to") {
		t.Errorf("-o wide at 80 columns was fitted:\n%s", r.Screen)
	}
}
