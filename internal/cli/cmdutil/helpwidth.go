package cmdutil

import (
	"strings"
	"sync"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// helpWidths holds each root command's width for --help (WrapHelp).
var helpWidths sync.Map // *cobra.Command (a root) → func() int

func init() {
	cobra.AddTemplateFunc("wrappedFlagUsages", func(flags *pflag.FlagSet, c *cobra.Command) string {
		return flags.FlagUsagesWrapped(helpWidth(c))
	})
}

// WrapHelp makes --help wrap the flags' descriptions, at spaces, to
// width() columns (the terminal's), or to 80 when it is 0 (help piped or
// captured): at 80 columns, a terminal that wrapped pflag's one-line
// descriptions itself broke them mid-word.
func WrapHelp(root *cobra.Command, width func() int) {
	helpWidths.Store(root, width)
	tmpl := root.UsageTemplate()
	for _, set := range []string{".LocalFlags", ".InheritedFlags"} {
		tmpl = strings.Replace(tmpl, "{{"+set+".FlagUsages | trimTrailingWhitespaces}}", "{{wrappedFlagUsages "+set+" . | trimTrailingWhitespaces}}", 1)
	}
	root.SetUsageTemplate(tmpl)
}

func helpWidth(c *cobra.Command) int {
	if w, ok := helpWidths.Load(c.Root()); ok {
		if n := w.(func() int)(); n > 0 {
			return n
		}
	}
	return 80
}
