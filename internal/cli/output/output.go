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

	key      int   // the column kept whole (KeepKey); -1: none
	drop     []int // with key: the columns left out first, in turn
	wide     bool  // SetWide: render every column whole
	wrapLast bool  // WrapLast: the last column folds onto more lines
	fitting  Fitting
}

// Fitting is what fitting a terminal table to its width did: the columns
// it left out, and whether the key column shows each key's unique tail.
type Fitting struct {
	Dropped []string // headers of the columns left out
	Tails   bool     // keys cut from the left to their unique tail
}

// NewTable returns a table for the streams' stdout.
func NewTable(s *iostreams.IOStreams, header ...string) *Table {
	return &Table{w: s.Out, tty: s.IsStdoutTTY(), width: s.TerminalWidth(), header: header, style: s.Renderer().NewStyle().Bold(true), key: -1}
}

// KeepKey makes column key the rows' key, never cut at its end: to fit the
// terminal, the columns of drop are left out in that order and the others
// shortened first; a key wider than the terminal leaves room for is shown
// by its unique tail ("…" and the shortest end that tells the rows apart).
func (t *Table) KeepKey(key int, drop ...int) {
	t.key, t.drop = key, drop
}

// SetWide renders a terminal table whole, every column and every cell,
// however wide (-o wide).
func (t *Table) SetWide(wide bool) { t.wide = wide }

// WrapLast makes the last column of a terminal table fold onto more lines
// at its spaces, in the width the other columns leave it (a third of the
// terminal at the least), instead of being cut: for a column that must be
// read whole, such as a run's outcome.
func (t *Table) WrapLast() { t.wrapLast = true }

// Fitted is what Flush did to fit the terminal (nothing piped, nothing
// with SetWide).
func (t *Table) Fitted() Fitting { return t.fitting }

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
	switch {
	case t.wide:
	case t.wrapLast && len(t.header) > 1 && t.width > 0:
		t.fitWrappingLast()
	case t.key >= 0:
		t.fitKeyed()
	default:
		fitColumns(t.width, t.header, t.rows)
	}
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

// keyFloor is the narrowest a column beside a whole key is shortened to
// before it is left out instead.
const keyFloor = 16

// minTail is the fewest characters of a key's end shown for it.
const minTail = 12

// fitKeyed fits a table with a key column (KeepKey) to t.width.
func (t *Table) fitKeyed() {
	n := len(t.header)
	if t.width <= 0 || t.key >= n {
		return
	}
	widths := make([]int, n)
	for i, h := range t.header {
		widths[i] = runewidth.StringWidth(h)
	}
	for _, r := range t.rows {
		for i := 0; i < n && i < len(r); i++ {
			widths[i] = max(widths[i], runewidth.StringWidth(r[i]))
		}
	}
	kept := make([]bool, n)
	for i := range kept {
		kept[i] = true
	}
	// need is the width of the kept columns with the others at their floor.
	need := func(keyW int) int {
		w := 0
		for i, k := range kept {
			switch {
			case !k:
			case i == t.key:
				w += keyW + cellPadding
			default:
				w += min(widths[i], keyFloor) + cellPadding
			}
		}
		return w
	}
	total := 0
	for _, w := range widths {
		total += w + cellPadding
	}
	if total <= t.width {
		return
	}
	// dropUntil leaves out the columns of t.drop in turn until the rest
	// fits beside a key keyW wide; it reports whether they do.
	dropUntil := func(keyW int) bool {
		for _, d := range t.drop {
			if need(keyW) <= t.width {
				break
			}
			kept[d] = false
		}
		return need(keyW) <= t.width
	}
	keyW := widths[t.key]
	if !dropUntil(keyW) {
		// Not even the columns that are never left out fit beside the
		// whole key: show its unique tail, and start again.
		for i := range kept {
			kept[i] = true
		}
		keyW = t.tailKeys()
		dropUntil(keyW)
	}
	// Shorten the kept columns but the key to fit what is left.
	var hdr []string
	var idx []int
	for i, k := range kept {
		if k {
			idx = append(idx, i)
			hdr = append(hdr, t.header[i])
		} else {
			t.fitting.Dropped = append(t.fitting.Dropped, t.header[i])
		}
	}
	rows := make([][]string, len(t.rows))
	for j, r := range t.rows {
		for _, i := range idx {
			if i < len(r) {
				rows[j] = append(rows[j], r[i])
			}
		}
	}
	newKey := slices.Index(idx, t.key)
	// Fit the other columns in the width the key leaves them.
	others := make([]string, 0, len(idx)-1)
	otherRows := make([][]string, len(rows))
	for c, h := range hdr {
		if c != newKey {
			others = append(others, h)
		}
	}
	for j, r := range rows {
		for c, v := range r {
			if c != newKey {
				otherRows[j] = append(otherRows[j], v)
			}
		}
	}
	fitColumns(t.width-keyW-cellPadding, others, otherRows)
	put := func(dst []string, src []string, key string) {
		o := 0
		for c := range dst {
			if c == newKey {
				dst[c] = key
				continue
			}
			dst[c] = src[o]
			o++
		}
	}
	put(hdr, others, hdr[newKey])
	for j := range rows {
		put(rows[j], otherRows[j], rows[j][newKey])
	}
	t.header, t.rows = hdr, rows
}

// fitWrappingLast fits the columns but the last in the width the last one
// needs (a third of the terminal at the least, its whole width at the
// most), then folds each of the last column's cells to what they leave.
func (t *Table) fitWrappingLast() {
	n := len(t.header)
	lastW := runewidth.StringWidth(t.header[n-1])
	for _, r := range t.rows {
		if len(r) == n {
			lastW = max(lastW, runewidth.StringWidth(r[n-1]))
		}
	}
	if t.widthUsed() <= t.width {
		return
	}
	last := make([]string, len(t.rows))
	for j, r := range t.rows {
		if len(r) == n {
			last[j], t.rows[j] = r[n-1], r[:n-1]
		}
	}
	lastHeader := t.header[n-1]
	t.header = t.header[:n-1]
	width := t.width
	header, rows := slices.Clone(t.header), make([][]string, len(t.rows))
	for j, r := range t.rows {
		rows[j] = slices.Clone(r)
	}
	// The last column's room: a third of the terminal, less where the
	// key would otherwise be cut to its tail (down to 20 columns).
	for reserve := min(lastW, max(width/3, runewidth.StringWidth(lastHeader))); ; reserve -= 4 {
		t.header, t.fitting = slices.Clone(header), Fitting{}
		for j := range rows {
			t.rows[j] = slices.Clone(rows[j])
		}
		t.width = width - reserve - cellPadding
		if t.key >= 0 && t.key < n-1 {
			t.fitKeyed()
		} else {
			fitColumns(t.width, t.header, t.rows)
		}
		if !t.fitting.Tails || reserve <= 20 {
			break
		}
	}
	t.width = width
	room := max(width-t.widthUsed()-cellPadding, minCut)
	t.header = append(t.header, lastHeader)
	for j := range t.rows {
		t.rows[j] = append(t.rows[j], Wrap(last[j], room, "", ""))
	}
}

// widthUsed is the columns the table's cells take as they stand, with
// their padding.
func (t *Table) widthUsed() int {
	used := 0
	for i := range t.header {
		w := runewidth.StringWidth(t.header[i])
		for _, r := range t.rows {
			if i < len(r) {
				w = max(w, runewidth.StringWidth(r[i]))
			}
		}
		used += w + cellPadding
	}
	return used
}

// tailKeys replaces each key by its unique tail: "…" and the shortest end
// (minTail characters at least) that no other row's key ends with. It
// returns the key column's new width.
func (t *Table) tailKeys() int {
	keys := make([][]rune, len(t.rows))
	longest := 0
	for j, r := range t.rows {
		keys[j] = []rune(r[t.key])
		longest = max(longest, len(keys[j]))
	}
	tail := func(k []rune, l int) string { return string(k[max(0, len(k)-l):]) }
	l := minTail
	for ; l < longest; l++ {
		seen := make(map[string]bool, len(keys))
		unique := true
		for _, k := range keys {
			s := tail(k, l)
			unique = unique && !seen[s]
			seen[s] = true
		}
		if unique {
			break
		}
	}
	w := runewidth.StringWidth(t.header[t.key])
	for j, k := range keys {
		s := tail(k, l)
		if len(k) > l {
			s = "…" + s
			t.fitting.Tails = true
		}
		t.rows[j][t.key] = s
		w = max(w, runewidth.StringWidth(s))
	}
	return w
}
