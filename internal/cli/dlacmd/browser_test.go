package dlacmd

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/deadletter/deadletter/internal/testsupport/browser"
)

// The report of the sample archive in a real browser: no console error, no
// request but the file itself, and as many bars as dla stats has groups.
func TestReportInBrowser(t *testing.T) {
	out := filepath.Join(t.TempDir(), "report.html")
	if r := run(t, false, nil, "", "report", "--archive", sampleArchive, "--out", out); r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	page := browser.Open(t, out, browser.ScreenshotPath(t, "dla-report.png"))
	if len(page.Errors) != 0 {
		t.Errorf("console errors: %q", page.Errors)
	}
	for _, u := range page.Requests {
		if !strings.HasPrefix(u, "file://") || !strings.HasSuffix(u, "report.html") {
			t.Errorf("the page requested %s", u)
		}
	}
	for _, c := range statsCharts {
		stats := sampleStats(t, c.by)
		got := page.Charts[c.chart]
		n := got.Bars
		if c.chart == "per-day" {
			n = got.Columns
		}
		if n != len(stats.Groups) || got.Sum != stats.Total {
			t.Errorf("%s: %+v drawn; dla stats --by %s has %d groups and %d objects", c.chart, got, c.by, len(stats.Groups), stats.Total)
		}
	}
	if len(page.Charts) < 6 {
		t.Errorf("charts drawn: %v", page.Charts)
	}
}
