package output

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/mattn/go-runewidth"

	"github.com/deadletter/deadletter/internal/cli/iostreams"
)

// TriageView is a triage as a terminal shows it (dla triage, pushdlq
// triage): a summary first, then each group as a header row fitted to the
// width, one verdict line, and its next command alone on a line of its own.
type TriageView struct {
	Unit   string // what a group counts: "object", "message"
	Groups []TriageCard
	// Steps are what to do, in order; the summary says the first two
	// ("first: …; then …"), or Idle when there is none. Notes are further
	// summary lines (what was not checked, a sample).
	Steps []string
	Idle  string
	Notes []string
}

// TriageCard is one group of a TriageView. Every text may come from the
// archive or a queue: WriteTriage escapes it before styling its own parts.
type TriageCard struct {
	Count int
	Class string // transient, fix-first, permanent or unknown: the badge
	// Cells are the rest of the header row, aligned across groups: the
	// first (a date or a window) is never cut; the others but the last
	// are at most LeadCellWidth columns (cut one before, to keep a suffix
	// such as "+3") and give way on a narrow terminal; the last is cut to
	// what the width leaves.
	Cells []string
	// Verdicts are the verdict, then shorter forms of it (fewer names):
	// the first that fits on one line is shown, else the last, wrapped.
	Verdicts []string
	// Command is the next command, quoted for the shell: printed whole on
	// its own line, never cut, for copying. "" for none.
	Command string
}

// LeadCellWidth is the most a header cell other than the last takes.
const LeadCellWidth = 28

// minLastCell is the narrowest the last header cell is cut to, and
// minLeadCell the others, when the terminal is narrow; a header row that
// does not fit even then runs past the edge.
const (
	minLastCell = 16
	minLeadCell = 10
)

// triageClasses are the classes in the order the summary counts them,
// with each badge's colours (ANSI: background, foreground).
var triageClasses = []struct{ name, bg, fg string }{
	{"transient", "2", "0"},
	{"fix-first", "3", "0"},
	{"permanent", "1", "15"},
	{"unknown", "8", "15"},
}

const badgeWidth = len("fix-first") + 2

// Cut shortens s to at most width columns, ending it with "…" when cut.
func Cut(s string, width int) string {
	if runewidth.StringWidth(s) <= width {
		return s
	}
	return runewidth.Truncate(s, max(width, 1), "…")
}

// WriteTriage writes v to the streams' stdout, a terminal, fitted to its
// width (80 columns when it has none). Archived text is escaped (OneLine)
// first, then cut, then the view's own styling is added with lipgloss, so
// that escaping never touches it. Colour follows the streams (NO_COLOR,
// TERM=dumb: none).
func WriteTriage(s *iostreams.IOStreams, v TriageView) error {
	width := s.TerminalWidth()
	if width <= 0 {
		width = 80
	}
	r, color := s.Renderer(), s.ColorEnabled()
	bold := r.NewStyle().Bold(true)
	badge := func(class string) string {
		text := "[" + class + "]"
		for _, c := range triageClasses {
			if c.name == class && color {
				return r.NewStyle().Background(lipgloss.Color(c.bg)).Foreground(lipgloss.Color(c.fg)).Bold(true).
					Render(" " + class + strings.Repeat(" ", max(badgeWidth-2-len(class), 0)) + " ")
			}
		}
		return text + strings.Repeat(" ", max(badgeWidth-runewidth.StringWidth(text), 0))
	}
	var b strings.Builder

	// The summary: objects by class, then what to do first.
	counts, total := map[string]int{}, 0
	for _, g := range v.Groups {
		counts[g.Class] += g.Count
		total += g.Count
	}
	var parts []string
	for _, c := range triageClasses {
		if n := counts[c.name]; n > 0 {
			word := c.name
			if color {
				word = r.NewStyle().Foreground(lipgloss.Color(c.bg)).Bold(true).Render(word)
			}
			parts = append(parts, strconv.Itoa(n)+" "+word)
		}
	}
	head := Plural(total, v.Unit) + " in " + Plural(len(v.Groups), "group")
	if color {
		head = bold.Render(head)
	}
	if len(parts) > 0 {
		head += ": " + strings.Join(parts, ", ")
	}
	b.WriteString(head + "\n")
	first := v.Idle
	if len(v.Steps) > 0 {
		first = "first: " + v.Steps[0]
		if len(v.Steps) > 1 {
			first += "; then " + v.Steps[1]
		}
	}
	for _, line := range append([]string{first}, v.Notes...) {
		if line != "" {
			b.WriteString(Wrap(OneLine(line), width, "", "  ") + "\n")
		}
	}

	// Header rows: the count right-aligned, the badge, the cells aligned
	// across groups, the last one cut to what is left.
	countW, cols := 1, 0
	cells := make([][]string, len(v.Groups))
	for i, g := range v.Groups {
		countW = max(countW, len(strconv.Itoa(g.Count)))
		cols = max(cols, len(g.Cells))
		for _, c := range g.Cells {
			cells[i] = append(cells[i], OneLine(c))
		}
	}
	widths := make([]int, cols)
	for i := range cells {
		for j, c := range cells[i] {
			if j < cols-1 {
				cells[i][j] = Cut(c, LeadCellWidth)
			}
			widths[j] = max(widths[j], runewidth.StringWidth(cells[i][j]))
		}
	}
	// On a narrow terminal the widest lead cells but the first (a date or
	// a window, never cut) give way first, down to minLeadCell, so that
	// the last keeps minLastCell.
	lead := widths[:max(cols-1, 0)]
	used := countW + 2 + badgeWidth
	for _, w := range lead {
		used += 2 + w
	}
	for used+2+minLastCell > width {
		j := -1
		for k, w := range lead {
			if k > 0 && w > minLeadCell && (j < 0 || w > lead[j]) {
				j = k
			}
		}
		if j < 0 {
			break
		}
		lead[j]--
		used--
	}
	for i := range cells {
		for j := range cells[i] {
			if j < len(lead) {
				cells[i][j] = Cut(cells[i][j], lead[j])
			}
		}
	}
	last := max(width-used-2, minLastCell)
	indent := strings.Repeat(" ", countW+2)
	for i, g := range v.Groups {
		b.WriteString("\n")
		line := fmt.Sprintf("%*d", countW, g.Count)
		if color {
			line = bold.Render(line)
		}
		line += "  " + badge(g.Class)
		for j, c := range cells[i] {
			if j == cols-1 {
				line += "  " + Cut(c, last)
				continue
			}
			line += "  " + c + strings.Repeat(" ", widths[j]-runewidth.StringWidth(c))
		}
		b.WriteString(strings.TrimRight(line, " ") + "\n")
		if verdict := fitting(g.Verdicts, width-len(indent)); verdict != "" {
			b.WriteString(Wrap(verdict, width, indent, indent) + "\n")
		}
		if g.Command != "" {
			cmd := OneLine(g.Command)
			if color {
				cmd = bold.Render(cmd)
			}
			b.WriteString(indent + "  " + cmd + "\n")
		}
	}
	_, err := io.WriteString(s.Out, b.String())
	return err
}

// fitting is the first of texts (escaped) that fits in width columns,
// else the last.
func fitting(texts []string, width int) string {
	out := ""
	for _, t := range texts {
		out = OneLine(t)
		if runewidth.StringWidth(out) <= width {
			break
		}
	}
	return out
}

// WriteFields writes one tab-separated line of fields, each kept on one
// line with its controls escaped (OneLine): the piped form of a triage.
func WriteFields(w io.Writer, fields ...string) error {
	for i, f := range fields {
		fields[i] = OneLine(f)
	}
	_, err := fmt.Fprintln(w, strings.Join(fields, "\t"))
	return err
}
