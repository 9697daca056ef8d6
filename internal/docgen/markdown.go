package docgen

import (
	"regexp"
	"strings"

	"github.com/spf13/cobra"
)

var (
	numberedItem = regexp.MustCompile(`^\d+[.)] `)
	markerStart  = regexp.MustCompile(`^([-+] |#|[-=]+$)`)
)

var markdownSpecial = strings.NewReplacer(`\`, `\\`, "`", "\\`", "*", `\*`, "_", `\_`, "<", "&lt;", ">", "&gt;", "[", `\[`, "]", `\]`)

// markdownText is a long text as markdown that renders as --help reads:
// prose escaped (a <placeholder> is not an HTML tag), every indented block
// (a table, a list, a command) fenced, so it stays aligned.
func markdownText(text string) string {
	var parts []string
	for _, bl := range blocks(text) {
		if bl.kind == prose {
			lines := make([]string, len(bl.lines))
			for i, l := range bl.lines {
				l = markdownSpecial.Replace(l)
				// A line must not start a list, a heading or a rule.
				if m := numberedItem.FindStringIndex(l); m != nil {
					l = l[:m[1]-2] + `\` + l[m[1]-2:]
				} else if markerStart.MatchString(l) {
					l = `\` + l
				}
				lines[i] = l
			}
			parts = append(parts, strings.Join(lines, "\n"))
			continue
		}
		parts = append(parts, "```text\n"+strings.Join(bl.lines, "\n")+"\n```")
	}
	return strings.Join(parts, "\n\n")
}

// withMarkdownLongs sets every command's Long to its markdown for the
// length of gen, cobra's markdown generator writing Long as it is.
func withMarkdownLongs(root *cobra.Command, gen func() error) error {
	saved := map[*cobra.Command]string{}
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Long != "" {
			saved[c] = c.Long
			c.Long = markdownText(c.Long)
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	defer func() {
		for c, long := range saved {
			c.Long = long
		}
	}()
	return gen()
}
