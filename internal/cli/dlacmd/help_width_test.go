package dlacmd

import (
	"context"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/deadletter/deadletter/internal/cli/iostreams"
)

// flagLines are the lines of the Flags and Global Flags sections of a
// --help.
func flagLines(help string) []string {
	var out []string
	in := false
	for _, l := range strings.Split(help, "\n") {
		switch {
		case l == "Flags:" || l == "Global Flags:":
			in = true
		case l == "":
			in = false
		case in:
			out = append(out, l)
		}
	}
	return out
}

// TestHelpWrapsFlagsToTheTerminal pins --help on a terminal of 80 columns
// (and, piped, at 80): every flag description is wrapped at a space
// within the width, so the terminal never breaks a word; at 200 columns
// the descriptions are wrapped wider.
func TestHelpWrapsFlagsToTheTerminal(t *testing.T) {
	ios, _, _, _ := iostreams.Test()
	var paths [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		paths = append(paths, path)
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() {
				walk(sub, append(append([]string{}, path...), sub.Name()))
			}
		}
	}
	walk(NewCmdRoot(NewFactory(ios, func(string) string { return "" })), nil)
	at80, flags := map[string]int{}, map[string]int{}
	for _, width := range []int{80, 0, 200} {
		for _, path := range paths {
			ios, _, out, _ := iostreams.Test()
			ios.SetTTY(true, width > 0, true)
			ios.SetWidth(width)
			f := NewFactory(ios, func(string) string { return "" })
			if code := Run(context.Background(), f, append(append([]string{}, path...), "--help")); code != 0 {
				t.Fatalf("dla %v --help: exit %d", path, code)
			}
			lines := flagLines(out.String())
			n := 0
			for _, l := range lines {
				if strings.HasPrefix(strings.TrimSpace(l), "-") {
					n++
				}
			}
			flags[strings.Join(path, " ")] = n
			if len(lines) == 0 {
				t.Fatalf("dla %v --help has no flags:\n%s", path, out.String())
			}
			limit := max(width, 80)
			for _, l := range lines {
				if len([]rune(l)) > limit {
					t.Errorf("dla %v --help at %d columns: a flag line is %d wide: %q", path, width, len([]rune(l)), l)
				}
			}
			key := strings.Join(path, " ")
			switch width {
			case 80:
				at80[key] = len(lines)
			case 200:
				if len(lines) >= at80[key] && at80[key] > flags[key] {
					t.Errorf("dla %v --help at 200 columns is wrapped as at 80 (%d lines)", path, len(lines))
				}
			}
		}
	}
}
