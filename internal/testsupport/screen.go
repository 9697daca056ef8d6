package testsupport

import (
	"regexp"
	"strconv"
	"strings"
)

// Rendered is what a terminal of Cols columns shows once text (a
// PTYResult's Screen) was written to it: its rows, trailing spaces cut, and
// the cursor's column at the end.
type Rendered struct {
	Rows      []string
	CursorCol int
}

// Render plays text on a terminal of cols columns as xterm does for what
// the tools print: characters (wrapping at the right edge), \n (a new line,
// as the terminal's \r\n), \r, \b, \t, and the CSI sequences of the
// status line: erase in line (K), cursor up, down, forward, back and to a
// column (A, B, C, D, G). Colours and other sequences change nothing. It
// shows what ScreenLines cannot: whether a progress line was erased before
// the next line, or left glued to it.
func Render(text string, cols int) Rendered {
	var rows [][]rune
	row, col := 0, 0
	cell := func() {
		for len(rows) <= row {
			rows = append(rows, nil)
		}
		for len(rows[row]) < col {
			rows[row] = append(rows[row], ' ')
		}
	}
	rs := []rune(text)
	for i := 0; i < len(rs); i++ {
		switch c := rs[i]; {
		case c == '\n':
			row, col = row+1, 0
		case c == '\r':
			col = 0
		case c == '\b':
			col = max(col-1, 0)
		case c == '\t':
			col = min((col/8+1)*8, cols-1)
		case c == 0x1b && i+1 < len(rs) && rs[i+1] == '[':
			j := i + 2
			for j < len(rs) && (rs[j] < 0x40 || rs[j] > 0x7e) {
				j++
			}
			if j >= len(rs) {
				i = j
				break
			}
			params := string(rs[i+2 : j])
			n, err := strconv.Atoi(strings.TrimLeft(params, "?"))
			if err != nil {
				n = 0
			}
			step := max(n, 1)
			switch rs[j] {
			case 'K':
				cell()
				switch n {
				case 0:
					rows[row] = rows[row][:col]
				case 1:
					for k := 0; k <= col && k < len(rows[row]); k++ {
						rows[row][k] = ' '
					}
				case 2:
					rows[row] = nil
				}
			case 'A':
				row = max(row-step, 0)
			case 'B':
				row += step
			case 'C':
				col = min(col+step, cols-1)
			case 'D':
				col = max(col-step, 0)
			case 'G':
				col = min(step-1, cols-1)
			}
			i = j
		case c == 0x1b && i+1 < len(rs) && rs[i+1] == ']':
			j := i + 2
			for j < len(rs) && rs[j] != 0x07 && !(rs[j] == 0x1b && j+1 < len(rs) && rs[j+1] == '\\') {
				j++
			}
			if j < len(rs) && rs[j] == 0x1b {
				j++
			}
			i = j
		case c == 0x1b:
			i++ // a two-character sequence
		case c < 0x20 || c == 0x7f:
		default:
			if col >= cols {
				row, col = row+1, 0
			}
			cell()
			if col < len(rows[row]) {
				rows[row][col] = c
			} else {
				rows[row] = append(rows[row], c)
			}
			col++
		}
	}
	r := Rendered{CursorCol: col}
	for _, line := range rows {
		r.Rows = append(r.Rows, strings.TrimRight(string(line), " "))
	}
	for len(r.Rows) > 0 && r.Rows[len(r.Rows)-1] == "" {
		r.Rows = r.Rows[:len(r.Rows)-1]
	}
	return r
}

// String is the rendered screen, a row a line.
func (r Rendered) String() string { return strings.Join(r.Rows, "\n") }

// GluedToStatus lists the rendered rows that hold a status line's text
// (status matches it: `replaying: \d+ of \d+ done`) and anything else
// before or after it: a progress line not erased before the next write,
// or the next write not started on a line of its own.
func GluedToStatus(r Rendered, status *regexp.Regexp) []string {
	var glued []string
	for _, row := range r.Rows {
		if loc := status.FindStringIndex(row); loc != nil && strings.TrimSpace(row[:loc[0]]+row[loc[1]:]) != "" {
			glued = append(glued, row)
		}
	}
	return glued
}
