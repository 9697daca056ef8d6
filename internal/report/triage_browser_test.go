package report_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/deadletter/deadletter/internal/cli/dlacmd"
	"github.com/deadletter/deadletter/internal/cli/iostreams"
	"github.com/deadletter/deadletter/internal/report"
	"github.com/deadletter/deadletter/internal/testsupport/browser"
)

// hostile is archived text that would run, load or break out of an
// attribute if it were not escaped.
const hostile = `<script>window.pwned=1</script>"'><img src=x onerror="window.pwned=2">`

// longTriage is a triage with what the sample archive lacks: a fix-first
// verdict naming 30 execution ARNs (as a database-checked triage of a large
// archive does), a push DLQ's groups, and hostile archived text in the error
// class, the class, the verdict and the command.
func longTriage() []report.TriageRow {
	var arns []string
	for i := range 30 {
		arns = append(arns, fmt.Sprintf("arn:aws:states:us-east-1:123456789012:execution:my-stack-IngestGranule:%08x-1b2c-4d5e-8f90-%012d", i*7919, i))
	}
	return []report.TriageRow{
		{Count: 412, Class: "fix-first", What: "UnmetRequirementsError: Could not satisfy requirements for writing records to PostgreSQL. No records written to the database.",
			Verdict: "fix first: collections MOD09GQ___006; executions " + strings.Join(arns, ", ") + "; 12 of 412 ready now",
			Next:    "create collection MOD09GQ___006; executions " + strings.Join(arns, ", ") + ", then: dla recover --archive s3://bucket/stack --from 2024-03-01 --to 2024-03-05 --error-class 'UnmetRequirementsError: Could not satisfy requirements for writing records to PostgreSQL. No records written to the database.' --dry-run"},
		{Count: 57, Class: "transient", What: "1004 PushFailed in 2025-11-14T08:30:00Z/2025-11-14T08:43:00Z", Verdict: "retry now: replay this burst once the cause is gone",
			Next: "pushdlq replay --dlq push-dlq --queue-base-url https://sqs.us-east-1.amazonaws.com/123456789012/push- --window 2025-11-14T08:30:00Z/2025-11-14T08:43:00Z --codes 1004 --dry-run"},
		{Count: 3, Class: "permanent", What: "2002 PushServiceNotSupported in 2025-11-14T09:00:00Z/2025-11-14T09:01:00Z", Verdict: "never as it is: a replay fails the same way", Next: "no replay"},
		{Count: 1, Class: "unknown", What: "Error: " + hostile, Verdict: "unknown: no rule; look at one before retrying " + hostile,
			Next: `open one: dla show --archive s3://bucket/stack 'stack/dead-letter-archive/sqs/2024-03-01/` + strings.ReplaceAll(hostile, `'`, `'\''`) + `'`},
		{Count: 1, Class: `"><script>window.pwned=3</script>`, What: hostile, Verdict: hostile, Next: "dla search --error-class " + hostile},
	}
}

// The triage section in a real browser, on a desktop (1,280 px) and on a
// phone (390 px): of the sample archive's report and of a long and hostile
// triage. Each class is a badge that never breaks inside its word, each
// command is in a block of its own that one click selects whole, the page
// fits the width, nothing is requested, and no archived text runs.
func TestTriageSectionInBrowser(t *testing.T) {
	dir := t.TempDir()
	sample := filepath.Join(dir, "sample.html")
	ios, _, _, errOut := iostreams.Test()
	f := dlacmd.NewFactory(ios, func(string) string { return "" })
	f.Now = func() time.Time { return time.Date(2024, 3, 3, 12, 0, 0, 0, time.UTC) }
	if code := dlacmd.Run(context.Background(), f, []string{"report", "--archive", "../../testdata/archive/demo", "--out", sample,
		"--title", "Dead Letter Archive report: the sample archive"}); code != 0 && code != 3 {
		t.Fatalf("dla report: exit %d: %s", code, errOut)
	}
	long := filepath.Join(dir, "long.html")
	rows := longTriage()
	writePage(t, long, report.Page{Title: "A long triage", Sections: []report.Section{report.TriageSection(rows, "Test rows.")}})

	// A page's own title and subtitle name the archive, one word without a
	// space that the 22 px title could not break: at 390 px the page ran
	// past the window by itself (the sample above has a --title of words).
	titled := filepath.Join(dir, "titled.html")
	writePage(t, titled, report.Page{Title: "Dead Letter Archive report: s3://ops_system_bucket/cumulus_stack_prod",
		Subtitle: []string{"s3://ops_system_bucket/cumulus_stack_prod/dead-letter-archive/sqs/2024-03-01, 71 objects matched"},
		Sections: []report.Section{report.TriageSection(rows, "Test rows.")}})

	for _, c := range []struct {
		name, path       string
		groups, commands int
	}{{"dla-report-triage", sample, 8, 8}, {"long-triage", long, len(rows), len(rows) - 1}, {"long-title", titled, len(rows), len(rows) - 1}} {
		for _, width := range []int{1280, 390} {
			t.Run(fmt.Sprintf("%s-%d", c.name, width), func(t *testing.T) {
				got := openTriage(t, c.path, width, browser.ScreenshotPath(t, fmt.Sprintf("%s-%d.png", c.name, width)))
				if len(got.Errors) != 0 {
					t.Errorf("console errors: %q", got.Errors)
				}
				for _, u := range got.Requests {
					if !strings.HasPrefix(u, "file://") || !strings.HasSuffix(u, filepath.Base(c.path)) {
						t.Errorf("the page requested %s", u)
					}
				}
				r := got.Result
				if r.Pwned != "undefined" {
					t.Errorf("archived text ran: window.pwned = %s", r.Pwned)
				}
				if r.Groups != c.groups {
					t.Errorf("%d groups drawn, want %d", r.Groups, c.groups)
				}
				if r.Badges < c.groups+1 {
					t.Errorf("%d badges: want one per group and per class in the summary", r.Badges)
				}
				for _, b := range r.Broken {
					t.Errorf("a badge breaks inside its word at %d px: %s", width, b)
				}
				if r.Commands != c.commands {
					t.Errorf("%d command blocks, want %d", r.Commands, c.commands)
				}
				if r.Overflow != "" {
					t.Errorf("wider than the window at %d px: %s", width, r.Overflow)
				}
				if r.FirstCommand == "" || r.Selected != r.FirstCommand {
					t.Errorf("one click on the first command selects %q, not the command %q", r.Selected, r.FirstCommand)
				}
			})
		}
	}
}

func writePage(t *testing.T, path string, p report.Page) {
	t.Helper()
	var b strings.Builder
	if err := report.Write(&b, p); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

type triagePage struct {
	Errors, Requests []string
	Result           struct {
		Groups, Badges, Commands int
		Broken                   []string
		Overflow, Pwned          string
		Selected, FirstCommand   string
	}
}

// triageChecks measures the triage section as drawn: each badge must be one
// box of one line (its text one client rect, its height under two lines).
const triageChecks = `(() => {
	const sec = document.querySelector("section#triage");
	const badges = [...sec.querySelectorAll(".badge")];
	const broken = badges.filter(b => {
		const r = document.createRange();
		r.selectNodeContents(b);
		const lh = parseFloat(getComputedStyle(b).lineHeight);
		return b.getClientRects().length !== 1 || r.getClientRects().length !== 1 || b.offsetHeight >= 2 * lh;
	}).map(b => JSON.stringify(b.textContent) + " " + b.offsetWidth + "x" + b.offsetHeight);
	let overflow = document.documentElement.scrollWidth > document.documentElement.clientWidth ?
		"the page is " + document.documentElement.scrollWidth + " px wide" : "";
	for (const el of sec.querySelectorAll("*")) {
		const r = el.getBoundingClientRect();
		if (!overflow && r.right > document.documentElement.clientWidth + 0.5 && getComputedStyle(el).display !== "none") {
			overflow = el.tagName + "." + el.className + " ends at " + r.right;
			break;
		}
	}
	const first = sec.querySelector("pre.cmd code");
	return {
		groups: sec.querySelectorAll("li.tg").length,
		badges: badges.length,
		commands: sec.querySelectorAll("pre.cmd code").length,
		broken: broken,
		overflow: overflow,
		pwned: String(typeof window.pwned === "undefined" ? "undefined" : window.pwned),
		firstCommand: first ? first.textContent : "",
	};
})()`

// openTriage loads a page in headless Chromium with a viewport width px wide,
// checks its triage section, clicks the first command, and saves a full-page
// screenshot as png.
func openTriage(t *testing.T, path string, width int, png string) triagePage {
	t.Helper()
	tab := browser.NewTab(t, width, 900)
	ctx := tab.Ctx
	var page triagePage
	abs, _ := filepath.Abs(path)
	var checks string
	var selected string
	var shot []byte
	err := chromedp.Run(ctx,
		network.Enable(), log.Enable(), runtime.Enable(),
		chromedp.EmulateViewport(int64(width), 900),
		chromedp.Navigate("file://"+abs),
		chromedp.WaitReady("body"),
		chromedp.Evaluate(`JSON.stringify(`+triageChecks+`)`, &checks),
	)
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	if err := json.Unmarshal([]byte(checks), &page.Result); err != nil {
		t.Fatalf("%v: %s", err, checks)
	}
	if page.Result.Commands > 0 { // a real click on the first command
		err = chromedp.Run(ctx,
			chromedp.Click(`section#triage pre.cmd code`, chromedp.ByQuery),
			chromedp.Evaluate(`getSelection().toString()`, &selected),
			chromedp.Evaluate(`getSelection().removeAllRanges()`, nil),
		)
		if err != nil {
			t.Errorf("clicking the first command: %v", err)
		}
	}
	if err := chromedp.Run(ctx, chromedp.FullScreenshot(&shot, 100)); err != nil {
		t.Fatalf("chromium: %v", err)
	}
	page.Result.Selected = selected
	if err := os.WriteFile(png, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", png)
	page.Errors, page.Requests = tab.Seen()
	return page
}
