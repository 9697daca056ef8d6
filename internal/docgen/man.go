package docgen

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// roffEscape makes text print as itself in roff: a backslash is \e, every
// '-' is \- (ASCII hyphen-minus, so that a flag copied from the page still
// works), and a line cannot start a request. <, >, * and _ need nothing:
// the pages are written in roff directly, never through markdown.
func roffEscape(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	s = strings.ReplaceAll(s, "-", `\-`)
	return s
}

// roffLine is one input line of text: \& keeps a leading '.' or an apostrophe from
// being read as a request.
func roffLine(s string) string {
	// A <placeholder> of two words is never broken across lines.
	s = roffEscape(s)
	s = spacedPlaceholder.ReplaceAllStringFunc(s, func(p string) string { return strings.ReplaceAll(p, " ", `\ `) })
	return `\&` + s + "\n"
}

var spacedPlaceholder = regexp.MustCompile(`<[A-Za-z][A-Za-z ]* [A-Za-z ]*>`)

func writeBlocks(b *strings.Builder, text string) {
	for _, bl := range blocks(text) {
		switch bl.kind {
		case prose:
			b.WriteString(".PP\n" + roffLine(bl.text))
		case list:
			width := 0
			for _, e := range bl.entries {
				width = max(width, len(e.term))
			}
			// A term wider than the page allows goes on a line of its own.
			width = min(width+2, 24)
			b.WriteString(".PP\n.PD 0\n.RS 2\n")
			for _, e := range bl.entries {
				fmt.Fprintf(b, ".TP %d\n%s%s", width, roffLine(e.term), roffLine(e.desc))
			}
			b.WriteString(".PD\n.RE\n")
		case verbatim:
			b.WriteString(".PP\n.RS 2\n.nf\n")
			for _, l := range bl.lines {
				b.WriteString(roffLine(l))
			}
			b.WriteString(".fi\n.RE\n")
		}
	}
}

// manTitle is the page's name in its header: the command's path, dashed
// and upper-cased (DLA\-RECOVER).
func manTitle(cmd *cobra.Command) string {
	return strings.ToUpper(manName(cmd))
}

func manName(cmd *cobra.Command) string { return strings.ReplaceAll(cmd.CommandPath(), " ", "-") }

// helpTopicSections are the root page's sections made of the help topics
// (`dla help exit-codes`), under the names man pages give them.
var helpTopicSections = map[string]string{"environment": "ENVIRONMENT", "exit-codes": "EXIT STATUS"}

// genMan is the man page of one command, in roff. date is the build's,
// as YYYY-MM-DD.
func genMan(cmd *cobra.Command, date string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, ".TH \"%s\" \"1\" \"%s\" \"deadletter\" \"deadletter manual\"\n", roffEscape(manTitle(cmd)), date)
	b.WriteString(".nh\n.ad l\n")
	b.WriteString(".SH NAME\n" + roffLine(manName(cmd)+" - "+cmd.Short))
	b.WriteString(".SH SYNOPSIS\n")
	use := strings.TrimPrefix(cmd.UseLine(), cmd.CommandPath())
	fmt.Fprintf(&b, "\\fB%s\\fR%s\n", roffEscape(cmd.CommandPath()), roffEscape(use))
	b.WriteString(".SH DESCRIPTION\n")
	long := cmd.Long
	if long == "" {
		long = cmd.Short + "."
	}
	writeBlocks(&b, long)
	if flags := cmd.NonInheritedFlags(); flags.HasAvailableFlags() {
		b.WriteString(".SH OPTIONS\n")
		writeFlags(&b, flags)
	}
	if flags := cmd.InheritedFlags(); flags.HasAvailableFlags() {
		b.WriteString(".SH OPTIONS INHERITED FROM PARENT COMMANDS\n")
		writeFlags(&b, flags)
	}
	if !cmd.HasParent() {
		var topics []*cobra.Command
		for _, c := range cmd.Commands() {
			if c.IsAdditionalHelpTopicCommand() {
				topics = append(topics, c)
			}
		}
		sort.Slice(topics, func(i, j int) bool { return topics[i].Name() < topics[j].Name() })
		for _, c := range topics {
			title, ok := helpTopicSections[c.Name()]
			if !ok {
				title = strings.ToUpper(strings.ReplaceAll(c.Name(), "-", " "))
			}
			fmt.Fprintf(&b, ".SH %s\n", title)
			writeBlocks(&b, c.Long)
		}
	}
	if cmd.Example != "" {
		b.WriteString(".SH EXAMPLES\n.RS 2\n.nf\n")
		for _, l := range dedent(strings.Split(strings.TrimRight(cmd.Example, "\n"), "\n")) {
			b.WriteString(roffLine(l))
		}
		b.WriteString(".fi\n.RE\n")
	}
	var also []string
	if cmd.HasParent() {
		also = append(also, manName(cmd.Parent()))
	}
	children := cmd.Commands()
	sort.Slice(children, func(i, j int) bool { return children[i].Name() < children[j].Name() })
	for _, c := range children {
		if c.IsAvailableCommand() && !c.IsAdditionalHelpTopicCommand() {
			also = append(also, manName(c))
		}
	}
	if len(also) > 0 {
		b.WriteString(".SH SEE ALSO\n")
		for i, name := range also {
			sep := ","
			if i == len(also)-1 {
				sep = ""
			}
			fmt.Fprintf(&b, "\\fB%s\\fR(1)%s\n", roffEscape(name), sep)
		}
	}
	return []byte(b.String())
}

func writeFlags(b *strings.Builder, flags *pflag.FlagSet) {
	flags.VisitAll(func(f *pflag.Flag) {
		if f.Hidden || f.Deprecated != "" {
			return
		}
		varname, usage := pflag.UnquoteUsage(f)
		tag := `\fB\-\-` + roffEscape(f.Name) + `\fR`
		if f.Shorthand != "" && f.ShorthandDeprecated == "" {
			tag = `\fB\-` + roffEscape(f.Shorthand) + `\fR, ` + tag
		}
		if varname != "" {
			if f.NoOptDefVal != "" {
				tag += `[=\fI` + roffEscape(varname) + `\fR]`
			} else {
				tag += ` \fI` + roffEscape(varname) + `\fR`
			}
		}
		if def := flagDefault(f); def != "" {
			usage += " (default " + def + ")"
		}
		b.WriteString(".TP\n" + tag + "\n" + roffLine(usage))
	})
}

// flagDefault is the default --help shows for a flag, or "" for a zero
// value, as pflag's FlagUsages decides.
func flagDefault(f *pflag.Flag) string {
	switch f.DefValue {
	case "", "0", "false", "[]", "0s", "<nil>", "map[]":
		return ""
	}
	if f.Value.Type() == "string" {
		return fmt.Sprintf("%q", f.DefValue)
	}
	return f.DefValue
}
