package docgen

import (
	"bytes"
	"os"
	"path/filepath"
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
func TestGeneratedFilesAreUpToDate(t *testing.T) {
	files, err := Files(roots()...)
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
		if err != nil || !bytes.Equal(got, want) {
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
