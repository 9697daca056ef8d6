package docgen

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// groff finds groff, which renders the pages as man does. Without it the
// test skips, or fails when DEADLETTER_REQUIRE_GROFF=1 (as scripts/test
// sets, after installing groff-base).
func groff(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("groff")
	if err == nil {
		return p
	}
	if os.Getenv("DEADLETTER_REQUIRE_GROFF") == "1" {
		t.Fatal("no groff found (apt-get install groff-base)")
	}
	t.Skip("no groff found (apt-get install groff-base)")
	return ""
}

// render is a man page as man shows it at 80 columns, as plain text.
func render(t *testing.T, groffPath, page string) string {
	t.Helper()
	cmd := exec.Command(groffPath, "-man", "-Tutf8", "-rLL=78n", "-P-cbou", page)
	cmd.Env = append(os.Environ(), "LC_ALL=C.UTF-8")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil || errOut.Len() > 0 {
		t.Fatalf("groff %s: %v\n%s", page, err, errOut.String())
	}
	return out.String()
}

var (
	placeholder = regexp.MustCompile(`<[A-Za-z][A-Za-z -]*>`)
)

// TestManPagesRenderAsTheHelpReads renders every committed page with groff
// at 80 columns and checks what issue 38 found broken: every <placeholder>
// of the help is on the page (none became "//"), the header names the
// page's own command and the build's date, a table of the help is a list
// whose every term starts a line beside its description, and no line is
// wider than the terminal but a command kept whole to be copied.
func TestManPagesRenderAsTheHelpReads(t *testing.T) {
	g := groff(t)
	seen := 0
	for _, root := range roots() {
		root.InitDefaultHelpCmd()
		root.InitDefaultCompletionCmd()
		var walk func(*cobra.Command)
		walk = func(c *cobra.Command) {
			for _, sub := range c.Commands() {
				if sub.IsAvailableCommand() && !sub.IsAdditionalHelpTopicCommand() {
					walk(sub)
				}
			}
			seen++
			checkPage(t, g, c)
		}
		walk(root)
	}
	if seen < 30 {
		t.Fatalf("only %d pages checked", seen)
	}
}

func checkPage(t *testing.T, g string, c *cobra.Command) {
	name := manName(c)
	page := filepath.Join(repoRoot, "docs/man", name+".1")
	text := render(t, g, page)
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	title := strings.ToUpper(name) + "(1)"
	if !strings.HasPrefix(lines[0], strings.ToUpper(name)) || !strings.HasSuffix(lines[0], title) {
		t.Errorf("%s: header %q does not name %s", name, lines[0], title)
	}
	if footer := lines[len(lines)-1]; !regexp.MustCompile(`\s\d{4}-\d{2}-\d{2}\s`).MatchString(footer) || !strings.HasSuffix(footer, title) {
		t.Errorf("%s: footer %q has no YYYY-MM-DD date or does not name %s", name, footer, title)
	}
	// What the page is made of: the long text, the flags' usages and,
	// on a root page, the help topics.
	sources := c.Long
	c.Flags().VisitAll(func(f *pflag.Flag) { sources += "\n" + f.Usage })
	if !c.HasParent() {
		for _, sub := range c.Commands() {
			if sub.IsAdditionalHelpTopicCommand() {
				sources += "\n" + sub.Long
			}
		}
	}
	for _, p := range placeholder.FindAllString(sources, -1) {
		// Whole, on one line: <event date> broken across two is not one.
		if !strings.Contains(text, p) {
			t.Errorf("%s: placeholder %s is not on the page, or not on one line", name, p)
		}
	}
	for _, l := range lines {
		if strings.Contains(strings.ReplaceAll(l, "://", ":"), "//") {
			t.Errorf("%s: %q has a // where the help has none", name, l)
		}
	}

	// Tables: each term of a list begins a line (after the indentation),
	// followed on that line by its description's first word.
	texts := []string{c.Long}
	if !c.HasParent() {
		for _, sub := range c.Commands() {
			if sub.IsAdditionalHelpTopicCommand() {
				texts = append(texts, sub.Long)
			}
		}
	}
	var keep []string // lines kept whole: commands and layouts
	for _, tx := range texts {
		for _, bl := range blocks(tx) {
			switch bl.kind {
			case list:
				for _, e := range bl.entries {
					first := strings.Fields(e.desc)[0]
					re := regexp.MustCompile(`(?m)^ +` + regexp.QuoteMeta(e.term) + `( +` + regexp.QuoteMeta(first) + `| *$)`)
					if !re.MatchString(text) {
						t.Errorf("%s: the table entry %q (%s ...) does not start a line", name, e.term, first)
					}
				}
			case verbatim:
				keep = append(keep, bl.lines...)
			}
		}
	}
	keep = append(keep, strings.Split(c.Example, "\n")...)
	for _, l := range lines {
		if len([]rune(l)) <= 80 {
			continue
		}
		whole := false
		for _, k := range keep {
			whole = whole || strings.TrimSpace(k) == strings.TrimSpace(l)
		}
		if !whole {
			t.Errorf("%s: a line is wider than 80 columns: %q", name, l)
		}
	}
}
