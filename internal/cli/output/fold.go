package output

import (
	"fmt"
	"strings"

	"github.com/mattn/go-runewidth"
)

// Fold is the CLI's one text folding: it lays words out in lines of at
// most width columns, one space between two words on a line, the first
// line beginning with first and the others with rest (both counted in the
// width). A line breaks only before a word that would pass width, so a
// word wider than a line runs past the edge, alone on its line; the first
// word of a line is never preceded by a break.
//
// What a word is is the caller's: Wrap's are a text's words at each
// single space, Fields' a text's runs of non-space, and the recover plan's
// the items of a list (each with its comma), which may hold spaces.
func Fold(words []string, width int, first, rest string) string {
	var b strings.Builder
	line, lineW := first, runewidth.StringWidth(first)
	empty := true
	for _, w := range words {
		ww := runewidth.StringWidth(w)
		if !empty && lineW+1+ww > width {
			b.WriteString(line + "\n")
			line, lineW, empty = rest, runewidth.StringWidth(rest), true
		}
		if !empty {
			line += " "
			lineW++
		}
		line += w
		lineW += ww
		empty = false
	}
	b.WriteString(line)
	return b.String()
}

// Wrap is s folded (Fold) at each single space into lines of at most
// width columns, the first starting with first, the others with rest: a
// run of spaces is words that are empty, so a line that is not broken
// keeps every space s had there.
func Wrap(s string, width int, first, rest string) string {
	return Fold(strings.Split(s, " "), width, first, rest)
}

// Fields are s's words for Fold when s is to be kept as it is if it fits:
// s alone when it fits in room columns (the width less the lines'
// prefix) or room is 0 or less (not folded), else s's runs of non-white
// space (strings.Fields), so that a folded s loses its runs of white space
// (each becomes one space or a line break) and its leading and trailing
// ones.
func Fields(s string, room int) []string {
	if room <= 0 || runewidth.StringWidth(s) <= room {
		return []string{s}
	}
	return strings.Fields(s)
}

// HumanBytes is a size for people: "512 B", "1.5 KiB", "3.2 MiB",
// "1.0 GiB".
func HumanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
