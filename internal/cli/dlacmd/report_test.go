package dlacmd

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/cli/iostreams"
	"github.com/deadletter/deadletter/internal/testsupport/golden"
)

// runSized runs dla on a terminal of the given width.
func runSized(t *testing.T, width int, env map[string]string, args ...string) runResult {
	t.Helper()
	ios, _, out, errOut := iostreams.Test()
	ios.SetTTY(true, true, true)
	ios.SetWidth(width)
	getenv := func(k string) string { return env[k] }
	ios.SetEnv(getenv)
	f := NewFactory(ios, getenv)
	f.Now = func() time.Time { return time.Date(2024, 3, 6, 12, 0, 0, 0, time.UTC) }
	code := Run(context.Background(), f, args)
	return runResult{code: code, stdout: out.String(), stderr: errOut.String()}
}

// The terminal form of dla stats: a bar per row, sized to the width.
func TestStatsBarsGolden(t *testing.T) {
	for _, by := range []string{"date", "error", "collection"} {
		for _, width := range []int{60, 100} {
			for _, color := range []bool{true, false} {
				env := map[string]string{}
				name := fmt.Sprintf("stats_bars_%s_%d", by, width)
				if !color {
					env["NO_COLOR"] = "1"
					name += "_nocolor"
				}
				r := runSized(t, width, env, "stats", "--archive", sampleArchive, "--by", by, "--ignore-unreadable")
				if r.code != 0 {
					t.Fatalf("%s: exit %d: %s", name, r.code, r.stderr)
				}
				golden.Check(t, filepath.Join("testdata", name+".golden"), r.stdout)
				if !color {
					for i, line := range strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n") {
						if n := len([]rune(line)); n > width {
							t.Errorf("%s line %d is %d columns wide: %q", name, i, n, line)
						}
					}
				}
			}
		}
	}
	// Piped, and with -o json, nothing changes.
	piped := run(t, false, nil, "", "stats", "--archive", sampleArchive, "--by", "date", "--ignore-unreadable")
	if strings.ContainsRune(piped.stdout, '█') {
		t.Errorf("piped stats draws bars:\n%s", piped.stdout)
	}
}

// statsCharts are the report's charts whose numbers are those of dla stats
// --by a dimension.
var statsCharts = []struct{ chart, by string }{{"per-day", "date"}, {"errors", "error"}, {"collections", "collection"}}

// sampleStats is dla stats -o json of the sample archive by a dimension.
func sampleStats(t *testing.T, by string) StatsReport {
	t.Helper()
	var stats StatsReport
	s := run(t, false, nil, "", "stats", "--archive", sampleArchive, "--by", by, "-o", "json")
	if err := json.Unmarshal([]byte(s.stdout), &stats); err != nil {
		t.Fatal(err)
	}
	return stats
}

// The report of the sample archive: one file, no external reference, every
// chart's numbers those of dla stats, every key linked to its command.
func TestReportOfTheSampleArchive(t *testing.T) {
	out := filepath.Join(t.TempDir(), "report.html")
	r := run(t, false, nil, "", "report", "--archive", sampleArchive, "--out", out)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, bad := range []string{"<script", "http://", "https://", "<link", "@import", "url(", "<img", "<iframe"} {
		if strings.Contains(strings.ReplaceAll(page, `xmlns="http://www.w3.org/2000/svg"`, ""), bad) {
			t.Errorf("the report holds %q", bad)
		}
	}
	for _, c := range statsCharts {
		stats := sampleStats(t, c.by)
		bars := regexp.MustCompile(`<rect class="bar" data-chart="`+c.chart+`" data-category="[^"]*"(?: data-series="[^"]*")? data-value="(\d+)"`).FindAllStringSubmatch(page, -1)
		sum := 0
		for _, m := range bars {
			var n int
			fmt.Sscan(m[1], &n)
			sum += n
		}
		if sum != stats.Total {
			t.Errorf("%s: the bars add up to %d, dla stats counts %d", c.chart, sum, stats.Total)
		}
		groups := len(stats.Groups)
		if c.chart == "per-day" {
			if n := strings.Count(page, `<g class="column"`) - strings.Count(areaChart(page), `<g class="column"`); n != groups {
				t.Errorf("per-day: %d columns, dla stats has %d dates", n, groups)
			}
		} else if len(bars) != groups {
			t.Errorf("%s: %d bars, dla stats has %d groups", c.chart, len(bars), groups)
		}
	}
	// Each key shown links to a dla show command that opens it.
	links := regexp.MustCompile(`<a href="#(show-\d+)"><code>([^<]*)</code></a>`).FindAllStringSubmatch(page, -1)
	if len(links) < 3 {
		t.Fatalf("%d key links", len(links))
	}
	absSample, err := filepath.Abs(sampleArchive)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range links {
		if !strings.Contains(page, `<code id="`+l[1]+`">dla show --archive `+absSample+` `) {
			t.Errorf("link %s (%s) points at no command", l[1], l[2])
		}
	}
	// The commands work.
	cmd := regexp.MustCompile(`<code id="show-1">dla show --archive (\S+) (\S+)</code>`).FindStringSubmatch(page)
	if cmd == nil {
		t.Fatal("no first command")
	}
	if s := run(t, false, nil, "", "show", "--archive", cmd[1], strings.Trim(cmd[2], "'")); s.code != 0 {
		t.Errorf("the first command fails: %d %s", s.code, s.stderr)
	}
	if !strings.Contains(page, "Unreadable objects (2)") || !strings.Contains(page, "object is not valid JSON: empty") {
		t.Error("the unreadable objects are not listed with their reasons")
	}
	// --out - writes the same page to stdout.
	if s := run(t, false, nil, "", "report", "--archive", sampleArchive, "--out", "-"); s.code != 0 || s.stdout != page {
		t.Errorf("--out -: exit %d, %d bytes", s.code, len(s.stdout))
	}
}

// Issue 38 item 9: the report printed its commands with the --archive as
// given, relative to where dla report ran, so that pasted from a ticket
// they named no archive. Every command on the page names a local archive
// by its absolute path, and runs, through bash -c, from another directory.
func TestReportCommandsNameALocalArchiveByItsAbsolutePath(t *testing.T) {
	r := run(t, false, nil, "", "report", "--archive", sampleArchive, "--ignore-unreadable", "--out", "-")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	abs, err := filepath.Abs(sampleArchive)
	if err != nil {
		t.Fatal(err)
	}
	cmds := regexp.MustCompile(`<code(?: id="(show-\d+)")?[^>]*>(dla [^<]*)</code>`).FindAllStringSubmatch(r.stdout, -1)
	if len(cmds) < 3 {
		t.Fatalf("%d commands on the page", len(cmds))
	}
	elsewhere := t.TempDir()
	ran := 0
	for _, m := range cmds {
		cmd := html.UnescapeString(m[2])
		if strings.Contains(cmd, "--archive "+sampleArchive) || !strings.Contains(cmd, "--archive "+abs+" ") {
			t.Errorf("a command does not name the archive by its absolute path: %s", cmd)
			continue
		}
		if m[1] != "" && ran < 2 { // a key's show command
			ran++
			if out, code := bashPrinted(t, "cd "+elsewhere+" && "+cmd); code != 0 || out == "" {
				t.Errorf("from another directory, %s: exit %d", cmd, code)
			}
		}
	}
	if ran == 0 {
		t.Error("no key's dla show command on the page")
	}
}

func areaChart(page string) string {
	i := strings.Index(page, `<svg xmlns="http://www.w3.org/2000/svg" id="areas"`)
	if i < 0 {
		return ""
	}
	return page[i : i+strings.Index(page[i:], "</svg>")]
}

// Archived text cannot inject markup into the report.
func TestReportEscapesArchivedText(t *testing.T) {
	dir := t.TempDir()
	folder := filepath.Join(dir, "demo", "dead-letter-archive", "sqs", "2024-03-01")
	os.MkdirAll(folder, 0o755)
	body := `{"error":"<script>alert(1)</script>\u001b[31m","time":"2024-03-01T00:00:00Z","collectionId":"<img src=x>___1","granules":["G\"><svg onload=alert(1)>"],"body":"{}"}`
	os.WriteFile(filepath.Join(folder, `x"><b>key`), []byte(body), 0o644)
	r := run(t, false, nil, "", "report", "--archive", filepath.Join(dir, "demo"), "--out", "-")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, bad := range []string{"<script>", "<img src", "<svg onload", "<b>key", "\x1b"} {
		if strings.Contains(r.stdout, bad) {
			t.Errorf("the report holds %q unescaped", bad)
		}
	}
}

// The report of the sample archive read from S3 is the report read from
// disk: the same charts, numbers and keys.
func TestReportFromS3(t *testing.T) {
	e := newAthenaEnv(t) // the sample archive in versitygw
	local := run(t, false, nil, "", "report", "--archive", sampleArchive, "--out", "-")
	s3 := run(t, false, nil, "", "report", "--archive", "s3://"+e.bucket+"/demo", "--out", "-")
	if local.code != 0 || s3.code != 0 {
		t.Fatalf("exit %d, %d: %s %s", local.code, s3.code, local.stderr, s3.stderr)
	}
	abs, _ := filepath.Abs(sampleArchive)
	got := strings.ReplaceAll(s3.stdout, "s3://"+e.bucket+"/demo", "ARCHIVE")
	want := strings.ReplaceAll(strings.ReplaceAll(local.stdout, abs, "ARCHIVE"), sampleArchive, "ARCHIVE")
	if got != want {
		t.Errorf("the report from S3 differs from the local one")
		gl, wl := strings.Split(got, "\n"), strings.Split(want, "\n")
		for i := range min(len(gl), len(wl)) {
			if gl[i] != wl[i] {
				t.Fatalf("first difference, line %d:\n s3:    %.300s\n local: %.300s", i+1, gl[i], wl[i])
			}
		}
	}
}
