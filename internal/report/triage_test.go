package report_test

import (
	"html"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/deadletter/deadletter/internal/report"
)

func renderTriage(t *testing.T, rows []report.TriageRow) string {
	t.Helper()
	var b strings.Builder
	if err := report.Write(&b, report.Page{Title: "t", Sections: []report.Section{report.TriageSection(rows, "Test rows.")}}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// A hostile error class, class, verdict and key (markup, quotes that would
// end an attribute) stay text: no element or attribute of theirs reaches the
// page; and the page's Content-Security-Policy lets no script run and
// nothing load, should the escaping ever miss.
func TestTriageSectionKeepsHostileTextInert(t *testing.T) {
	page := renderTriage(t, longTriage())
	for _, bad := range []string{"<script>window", "<img", `onerror="window`, `"'>`} {
		if strings.Contains(page, bad) {
			t.Errorf("the page holds %q as markup", bad)
		}
	}
	escaped := html.EscapeString(hostile)
	if n := strings.Count(page, escaped); n < 5 {
		t.Errorf("the hostile text shown escaped %d times, want at least 5 (error classes, verdicts, commands)", n)
	}
	if !strings.Contains(page, `data-class="&#34;&gt;&lt;script&gt;window.pwned=3&lt;/script&gt;"`) || !strings.Contains(page, `<span class="badge other">&#34;&gt;&lt;script&gt;`) {
		t.Errorf("a hostile class is not kept in its attribute and badge as text")
	}
	if strings.Contains(page, "<script") {
		t.Error("the page holds a script")
	}
	csp := regexp.MustCompile(`<meta http-equiv="Content-Security-Policy" content="([^"]*)">`).FindStringSubmatch(page)
	if csp == nil || !strings.HasPrefix(html.UnescapeString(csp[1]), "default-src 'none';") || strings.Contains(csp[1], "script-src") {
		t.Errorf("the Content-Security-Policy does not forbid every script and request: %q", csp)
	}
}

// Each group's command is in a <pre class="cmd"><code> block of its own, holding exactly
// the command (the words around it, "open one:", "create providers …,
// then:", "lists them", stay outside), so that a copy takes the command and
// nothing else.
func TestTriageCommandBlockHoldsExactlyTheCommand(t *testing.T) {
	rec := `dla recover --archive s3://b/s --from 2024-03-01 --to 2024-03-05 --error-class 'TypeError: Cannot destructure property '\''startDate'\''' --dry-run`
	search := `dla search --archive s3://b/s --error-class 'AggregateError: <id>' -o keys --ignore-unreadable`
	show := `dla show --archive s3://b/s $'stack/dead-letter-archive/sqs/2024-03-01/a\tb'`
	replay := `pushdlq replay --dlq q --queue-base-url https://sqs/p- --window 2025-11-14T08:30:00Z/2025-11-14T08:43:00Z --codes 1004 --dry-run`
	for _, c := range []struct{ next, command, cmd, step string }{
		{rec, "", rec, "Run:"},
		{"create providers LANCE_NRT, LPCLOUD_S3, then: " + rec, "", rec, "Create providers LANCE_NRT, LPCLOUD_S3, then:"},
		{"not recoverable as it is: " + search + " lists them", "", search, "Not recoverable as it is; to list them:"},
		{"open one: " + show, "", show, "Open one:"},
		{replay, "", replay, "Run:"},
		{"no replay", "", "", "No replay"},
		{"create provider P, then: " + rec, rec, rec, "Create provider P, then:"},
	} {
		page := renderTriage(t, []report.TriageRow{{Count: 1, Class: "transient", What: "w", Verdict: "v", Next: c.next, Command: c.command}})
		blocks := regexp.MustCompile(`<pre class="cmd"><code>([^<]*)</code></pre>`).FindAllStringSubmatch(page, -1)
		switch {
		case c.cmd == "" && len(blocks) != 0:
			t.Errorf("%q: a command block %q", c.next, blocks[0][1])
		case c.cmd != "" && (len(blocks) != 1 || html.UnescapeString(blocks[0][1]) != c.cmd):
			t.Errorf("%q: command blocks %q, want exactly %q", c.next, blocks, c.cmd)
		}
		step := regexp.MustCompile(`<div class="step">(.*?)</div>`).FindStringSubmatch(page)
		if step == nil || html.UnescapeString(step[1]) != c.step {
			t.Errorf("%q: step %q, want %q", c.next, step, c.step)
		}
	}
}

// A list of more than four names shows its first three (fewer when they
// are long, as ARNs are) and "and N more", with the rest in a <details>
// below; the same list in the step is not folded a second time.
func TestTriageFoldsLongListsOfNames(t *testing.T) {
	page := renderTriage(t, longTriage()[:1])
	verdict := regexp.MustCompile(`<div class="verdict">(.*?)</div>`).FindStringSubmatch(page)
	if verdict == nil {
		t.Fatal("no verdict")
	}
	if n := strings.Count(verdict[1], "arn:aws:states"); n < 1 || n > 3 {
		t.Errorf("the verdict shows %d ARNs: %s", n, verdict[1])
	}
	if !strings.Contains(verdict[1], "collections MOD09GQ___006; executions") || !strings.Contains(verdict[1], "; 12 of 412 ready now") {
		t.Errorf("the verdict lost its words: %s", verdict[1])
	}
	shown := strings.Count(verdict[1], "arn:aws:states")
	folds := regexp.MustCompile(`(?s)<details class="more"><summary>The other (\d+) executions</summary><ul class="names">(.*?)</ul></details>`).FindAllStringSubmatch(page, -1)
	if len(folds) != 1 {
		t.Fatalf("%d folds of the executions, want one (the step's list is the verdict's)", len(folds))
	}
	if folds[0][1] != strconv.Itoa(30-shown) || strings.Count(folds[0][2], "<li>arn:aws:states") != 30-shown {
		t.Errorf("the fold says %s and holds %d ARNs; %d are shown", folds[0][1], strings.Count(folds[0][2], "<li>arn:"), shown)
	}
	if !strings.Contains(verdict[1], `and `+strconv.Itoa(30-shown)+` more</b>`) {
		t.Errorf("the verdict does not count the folded names: %s", verdict[1])
	}

	// Four short names are shown whole; triage's own "and 2 more" is counted.
	page = renderTriage(t, []report.TriageRow{
		{Count: 1, Class: "fix-first", What: "w", Verdict: "fix first: providers A, B, C, D (readiness not checked)", Next: "create providers A, B, C, D, then: dla recover x"},
		{Count: 1, Class: "fix-first", What: "w", Verdict: "fix first: collections A, B, C, D, E and 2 more", Next: "dla recover y"},
	})
	if !strings.Contains(html.UnescapeString(page), "fix first: providers A, B, C, D (readiness not checked)") {
		t.Errorf("four names folded")
	}
	if !regexp.MustCompile(`The other 4 collections</summary><ul class="names"><li>D</li><li>E</li><li class="unlisted">and 2 `).MatchString(page) {
		t.Errorf("the fold of five names and 2 more:\n%s", page)
	}
}

// A DLQ's triage counts messages, not objects.
func TestPushTriageCountsMessages(t *testing.T) {
	var b strings.Builder
	rows := []report.TriageRow{{Count: 57, Class: "transient", What: "1004 PushFailed", Verdict: "v", Next: "no replay"}, {Count: 1, Class: "unknown", What: "w", Verdict: "v", Next: "no replay"}}
	if err := report.Write(&b, report.Page{Title: "t", Sections: []report.Section{report.TriageSectionCounting(rows, "n", "message")}}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"57 messages in 1 group", `57 <small>messages</small>`, `1 <small>message</small>`} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(b.String(), "object") {
		t.Error("a DLQ's triage counts objects")
	}
}
