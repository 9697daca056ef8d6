package pushdlqcmd

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deadletter/deadletter/internal/cli/iostreams"
	"github.com/deadletter/deadletter/internal/sqsmove"
	"github.com/deadletter/deadletter/internal/testsupport"
	"github.com/deadletter/deadletter/internal/testsupport/browser"
	"github.com/deadletter/deadletter/internal/testsupport/golden"
)

// inspectDLQ runs pushdlq inspect --all on a DLQ of the parity messages in
// fauxqs, on a terminal of width columns (0: piped).
func inspectDLQ(t *testing.T, dlq string, width int, args ...string) (int, string, string) {
	t.Helper()
	ios, _, out, errOut := iostreams.Test()
	if width > 0 {
		ios.SetTTY(false, true, false)
		ios.SetWidth(width)
	}
	ios.SetEnv(func(k string) string {
		if k == "NO_COLOR" {
			return "1"
		}
		return ""
	})
	f := NewFactory(ios, func(string) string { return "" })
	f.SQS = func(context.Context) (sqsmove.API, string, error) { return testsupport.SQSClient(t), "fauxqs", nil }
	code := Run(context.Background(), f, append([]string{"inspect", "--dlq", dlq, "--all"}, args...))
	return code, out.String(), errOut.String()
}

// sparkSection is the sparkline part of inspect's terminal output.
func sparkSection(out string) string {
	i := strings.Index(out, "createdAt by error code")
	if i < 0 {
		return ""
	}
	s := out[i:]
	if j := strings.Index(s, "\n\n"); j >= 0 {
		s = s[:j+1]
	}
	return s
}

func TestInspectSparklinesAndHTML(t *testing.T) {
	c := testsupport.SQSClient(t)
	p := testsupport.NewPushDLQ(t, c, 120)
	for _, width := range []int{60, 100} {
		code, out, stderr := inspectDLQ(t, p.DLQ, width)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		sec := sparkSection(out)
		if sec == "" {
			t.Fatalf("no sparklines on a terminal:\n%s", out)
		}
		golden.Check(t, filepath.Join("testdata", "inspect_sparklines_"+map[int]string{60: "60", 100: "100"}[width]+".golden"), sec)
		for _, l := range strings.Split(strings.TrimSpace(sec), "\n")[1:] { // the rows, below the heading
			if n := len([]rune(l)); n > width {
				t.Errorf("width %d: a line of %d columns: %q", width, n, l)
			}
		}
	}
	code, piped, _ := inspectDLQ(t, p.DLQ, 0)
	if code != 0 || sparkSection(piped) != "" {
		t.Errorf("piped inspect draws sparklines:\n%s", piped)
	}

	out := filepath.Join(t.TempDir(), "dlq.html")
	code, js, stderr := inspectDLQ(t, p.DLQ, 0, "--html", out, "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep InspectReport
	if err := json.Unmarshal([]byte(js), &rep); err != nil {
		t.Fatalf("-o json with --html: %v", err)
	}
	page := browser.Open(t, out, browser.ScreenshotPath(t, "pushdlq-inspect.png"))
	if len(page.Errors) != 0 {
		t.Errorf("console errors: %q", page.Errors)
	}
	for _, u := range page.Requests {
		if !strings.HasPrefix(u, "file://") {
			t.Errorf("the page requested %s", u)
		}
	}
	hourly, prio := 0, 0
	for _, h := range rep.Hourly {
		hourly += h.Count
	}
	for _, h := range rep.ByPriority {
		prio += h.Count
	}
	if got := page.Charts["created-at"]; got.Sum != hourly {
		t.Errorf("createdAt chart: %+v, inspect counts %d messages with a createdAt", got, hourly)
	}
	if got := page.Charts["priority"]; got.Bars != len(rep.ByPriority) || got.Sum != prio {
		t.Errorf("priority chart: %+v, inspect has %d priorities, %d messages", got, len(rep.ByPriority), prio)
	}
	html, _ := os.ReadFile(out)
	if rep.Suggestion != nil && !strings.Contains(string(html), `class="band"`) {
		t.Error("the suggested window is not drawn")
	}
	for _, m := range rep.Malformed {
		if !strings.Contains(string(html), m.Key) {
			t.Errorf("malformed reason %s is not in the page", m.Key)
		}
	}
}
