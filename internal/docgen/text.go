package docgen

import (
	"regexp"
	"strings"
)

// The commands' long texts are plain text written for --help at 80
// columns: paragraphs of prose, and indented blocks that are either
// two-column lists (a verdict table, exit codes, environment variables,
// numbered steps) or preformatted lines (a command to copy). A block is one
// of these kinds, and each output format (roff, markdown) renders the kind
// its own way; nothing in the text is read as markup, so a <placeholder>,
// a '*' or a leading '.' stays what it is.

type blockKind int

const (
	prose    blockKind = iota // filled: the lines are one paragraph
	list                      // entries of a term and its description
	verbatim                  // lines kept as they are
)

type entry struct{ term, desc string }

type block struct {
	kind    blockKind
	text    string   // prose: the paragraph on one line
	entries []entry  // list
	lines   []string // as written, less the common indentation of a list's or verbatim's
}

// blocks splits a long text into its blocks. An indented run of lines
// that reads as a list is a list, any other indented run is verbatim,
// and unindented lines are prose.
func blocks(text string) []block {
	text = strings.ReplaceAll(text, "\t", "    ")
	var out []block
	var para, indented []string
	flushPara := func() {
		if len(para) > 0 {
			out = append(out, block{kind: prose, text: strings.Join(para, " "), lines: para})
			para = nil
		}
	}
	flushIndented := func() {
		if len(indented) > 0 {
			if entries, ok := asList(indented); ok {
				out = append(out, block{kind: list, entries: entries, lines: dedent(indented)})
			} else {
				out = append(out, block{kind: verbatim, lines: dedent(indented)})
			}
			indented = nil
		}
	}
	for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		line = strings.TrimRight(line, " ")
		switch {
		case line == "":
			flushPara()
			flushIndented()
		case line[0] == ' ':
			flushPara()
			indented = append(indented, line)
		default:
			flushIndented()
			// Cobra's completion help marks its subheadings as markdown.
			para = append(para, strings.TrimLeft(strings.TrimPrefix(line, "#### "), " "))
		}
	}
	flushPara()
	flushIndented()
	return out
}

func indentOf(line string) int { return len(line) - len(strings.TrimLeft(line, " ")) }

// A list's first line is a term, then two or more spaces (or, for a
// marker such as "-" or "1.", one) and its description, which sets the
// description's column. Every other line either starts an entry at the
// same indentation, its description (if any on that line) in the same
// column, or continues a description from that column on. A description
// aligned within itself (spaces inside it) is not a list but a layout.
var (
	termThenDesc   = regexp.MustCompile(`^( +)(\S.*?\S|\S)  +(\S)`)
	markerThenDesc = regexp.MustCompile(`^( +)(-|\d+\.) (\S)`)
)

func asList(lines []string) ([]entry, bool) {
	m := markerThenDesc.FindStringSubmatchIndex(lines[0])
	if m == nil {
		m = termThenDesc.FindStringSubmatchIndex(lines[0])
	}
	if m == nil {
		return nil, false
	}
	base, col := m[3], m[6]
	var entries []entry
	for _, line := range lines {
		ind := indentOf(line)
		switch {
		case ind == base:
			term, desc := line[base:], ""
			if len(line) > col && line[col-1] == ' ' && line[col] != ' ' {
				term, desc = strings.TrimRight(line[base:col], " "), line[col:]
			}
			entries = append(entries, entry{term: term, desc: desc})
		case ind == col && len(entries) > 0:
			e := &entries[len(entries)-1]
			e.desc = strings.TrimSpace(e.desc + " " + line[col:])
		default:
			return nil, false
		}
	}
	for _, e := range entries {
		if strings.Contains(e.desc, "   ") || e.desc == "" {
			return nil, false
		}
	}
	return entries, true
}

func dedent(lines []string) []string {
	least := -1
	for _, l := range lines {
		if i := indentOf(l); least < 0 || i < least {
			least = i
		}
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = l[least:]
	}
	return out
}
