// Package output prints records: a table (aligned with a header on a
// terminal, tab-separated without one when piped), a JSON array, or NDJSON.
// Everything streams except the terminal table, which is for people.
package output

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/mattn/go-runewidth"
	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/deadletter/deadletter/internal/cli/iostreams"
)

// Table prints rows. On a terminal it buffers them and renders an aligned
// table with a styled header, fitted to the terminal's width (the widest
// columns are cut with "…"), with control characters escaped (see Escape);
// piped, it writes each row at once as tab-separated values with no header,
// for cut and awk.
type Table struct {
	w      io.Writer
	tty    bool
	width  int // terminal columns; 0: do not fit
	header []string
	rows   [][]string
	style  lipgloss.Style
}

// NewTable returns a table for the streams' stdout.
func NewTable(s *iostreams.IOStreams, header ...string) *Table {
	return &Table{w: s.Out, tty: s.IsStdoutTTY(), width: s.TerminalWidth(), header: header, style: s.Renderer().NewStyle().Bold(true)}
}

// Row adds a row.
func (t *Table) Row(cells ...string) error {
	if t.tty {
		row := make([]string, len(cells))
		for i, c := range cells {
			row[i] = Escape(flattenCell.Replace(c))
		}
		t.rows = append(t.rows, row)
		return nil
	}
	for i, c := range cells {
		cells[i] = flattenCell.Replace(c)
	}
	_, err := fmt.Fprintln(t.w, strings.Join(cells, "\t"))
	return err
}

// flattenCell keeps a piped row on one line with tab-separated cells.
var flattenCell = strings.NewReplacer("\t", " ", "\n", " ")

// Flush renders a terminal table; piped rows are already written.
func (t *Table) Flush() error {
	if !t.tty || len(t.rows) == 0 {
		return nil
	}
	fitColumns(t.width, t.header, t.rows)
	header := make([]string, len(t.header))
	for i, h := range t.header {
		header[i] = t.style.Render(h)
	}
	tbl := tablewriter.NewTable(t.w,
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{
			Borders:  tw.BorderNone,
			Settings: tw.Settings{Separators: tw.Separators{BetweenColumns: tw.Off, BetweenRows: tw.Off}, Lines: tw.Lines{ShowHeaderLine: tw.Off}},
		})),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithRowAlignment(tw.AlignLeft),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithHeaderAutoWrap(tw.WrapNone),
	)
	tbl.Header(header)
	for _, r := range t.rows {
		if err := tbl.Append(r); err != nil {
			return err
		}
	}
	return tbl.Render()
}

// JSONStream writes values as one JSON array (indented) or as NDJSON.
type JSONStream struct {
	w      io.Writer
	ndjson bool
	n      int
}

// NewJSONStream returns a stream; call Close to end a JSON array.
func NewJSONStream(w io.Writer, ndjson bool) *JSONStream { return &JSONStream{w: w, ndjson: ndjson} }

// Write adds one value.
func (s *JSONStream) Write(v any) error {
	if s.ndjson {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		_, err = s.w.Write(append(b, '\n'))
		return err
	}
	b, err := json.MarshalIndent(v, "  ", "  ")
	if err != nil {
		return err
	}
	sep := ",\n  "
	if s.n == 0 {
		sep = "[\n  "
	}
	s.n++
	_, err = io.WriteString(s.w, sep+string(b))
	return err
}

// Close ends a JSON array ("[]" when empty).
func (s *JSONStream) Close() error {
	if s.ndjson {
		return nil
	}
	end := "\n]\n"
	if s.n == 0 {
		end = "[]\n"
	}
	_, err := io.WriteString(s.w, end)
	return err
}

// WriteJSON writes one indented JSON document.
func WriteJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// cellPadding is the blank the rendered table puts on each side of a cell.
const cellPadding = 2

// minCut is the narrowest a column is cut to; a table that does not fit
// even then runs past the edge rather than becoming unreadable.
const minCut = 6

// fitColumns cuts cells (with "…") so that the table fits in width
// columns: every column narrower than some limit stays whole, the wider
// ones are cut to that limit. Width 0 leaves the table as it is.
func fitColumns(width int, header []string, rows [][]string) {
	n := len(header)
	if width <= 0 || n == 0 {
		return
	}
	widths := make([]int, n)
	for i, h := range header {
		widths[i] = runewidth.StringWidth(h)
	}
	for _, r := range rows {
		for i := 0; i < n && i < len(r); i++ {
			widths[i] = max(widths[i], runewidth.StringWidth(r[i]))
		}
	}
	budget := width - cellPadding*n
	total := 0
	for _, w := range widths {
		total += w
	}
	if total <= budget {
		return
	}
	sorted := slices.Clone(widths)
	slices.Sort(sorted)
	limit, left := 0, budget
	for i, w := range sorted {
		if w*(n-i) > left {
			limit = left / (n - i)
			break
		}
		left -= w
	}
	limit = max(limit, minCut)
	cut := func(s string) string {
		if runewidth.StringWidth(s) <= limit {
			return s
		}
		return runewidth.Truncate(s, limit, "…")
	}
	for i := range header {
		header[i] = cut(header[i])
	}
	for _, r := range rows {
		for i := range r {
			r[i] = cut(r[i])
		}
	}
}
