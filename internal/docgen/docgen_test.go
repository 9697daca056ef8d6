package docgen

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/deadletter/deadletter/internal/cli/dlacmd"
	"github.com/deadletter/deadletter/internal/cli/iostreams"
	"github.com/deadletter/deadletter/internal/cli/pushdlqcmd"
	"github.com/deadletter/deadletter/internal/testsupport/golden"
)

const repoRoot = "../.."

func roots() []*cobra.Command {
	ios, _, _, _ := iostreams.Test()
	noenv := func(string) string { return "" }
	return []*cobra.Command{
		dlacmd.NewCmdRoot(dlacmd.NewFactory(ios, noenv)),
		pushdlqcmd.NewCmdRoot(pushdlqcmd.NewFactory(ios, noenv)),
	}
}

// TestGeneratedFilesAreUpToDate fails when docs/ or completions/ are out of
// date with the commands. Regenerate with scripts/gen-docs.
//
// The man pages' date is the build's (scripts/gen-docs passes it in
// DEADLETTER_DOCS_DATE), so the comparison leaves it out: a commit does
// not make the pages stale.
func TestGeneratedFilesAreUpToDate(t *testing.T) {
	date := "2000-01-01"
	if golden.Updating() {
		date = os.Getenv("DEADLETTER_DOCS_DATE")
		if !validDate.MatchString(date) {
			t.Fatalf("DEADLETTER_DOCS_DATE=%q is not a YYYY-MM-DD date; regenerate with scripts/gen-docs", date)
		}
	}
	files, err := Files(date, roots()...)
	if err != nil {
		t.Fatal(err)
	}
	if golden.Updating() {
		for _, dir := range []string{"docs/reference", "docs/man", "completions"} {
			os.RemoveAll(filepath.Join(repoRoot, dir))
		}
	}
	var stale []string
	for path, want := range files {
		full := filepath.Join(repoRoot, path)
		if golden.Updating() {
			os.MkdirAll(filepath.Dir(full), 0o755)
			if err := os.WriteFile(full, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(full)
		if err != nil || !bytes.Equal(withoutManDate(got), withoutManDate(want)) {
			stale = append(stale, path)
		}
	}
	// Files that the code no longer generates are stale too.
	for _, dir := range []string{"docs/reference", "docs/man", "completions"} {
		entries, _ := os.ReadDir(filepath.Join(repoRoot, dir))
		for _, e := range entries {
			if _, ok := files[dir+"/"+e.Name()]; !ok {
				stale = append(stale, dir+"/"+e.Name()+" (no longer generated)")
			}
		}
	}
	sort.Strings(stale)
	if len(stale) > 0 {
		t.Errorf("generated files are out of date; run scripts/gen-docs:\n  %s", strings.Join(stale, "\n  "))
	}
}

var (
	validDate = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)
	manDate   = regexp.MustCompile(`(?m)^(\.TH "[^"]*" "1" )"[^"]*"`)
)

// withoutManDate is a generated file with a man page's date left out.
func withoutManDate(b []byte) []byte { return manDate.ReplaceAll(b, []byte(`$1"DATE"`)) }

func TestEveryCommandIsDocumented(t *testing.T) {
	for _, root := range roots() {
		var walk func(*cobra.Command)
		walk = func(c *cobra.Command) {
			if c.Hidden || !c.IsAvailableCommand() && !c.IsAdditionalHelpTopicCommand() {
				return
			}
			if c.Short == "" {
				t.Errorf("%s has no short description", c.CommandPath())
			}
			for _, sub := range c.Commands() {
				walk(sub)
			}
		}
		walk(root)
	}
}

// TestMarkdownReferenceKeepsPlaceholdersAndTables pins the markdown
// reference as a markdown viewer shows it: a <placeholder> is escaped, not
// an HTML tag the viewer drops, and a table of the help is fenced, so its
// columns stay aligned.
func TestMarkdownReferenceKeepsPlaceholdersAndTables(t *testing.T) {
	files, err := Files("2000-01-01", roots()...)
	if err != nil {
		t.Fatal(err)
	}
	root := string(files["docs/reference/dla.md"])
	if !strings.Contains(root, "&lt;stack&gt;/dead-letter-archive/sqs/&lt;YYYY-MM-DD&gt;/") {
		t.Errorf("dla.md lost its placeholders:\n%s", root)
	}
	triage := string(files["docs/reference/dla_triage.md"])
	if !strings.Contains(triage, "```text\ntransient   retry now, once the cause is gone (a connection, a timeout,\n") {
		t.Errorf("dla_triage.md does not fence the verdict table:\n%s", triage)
	}
}
