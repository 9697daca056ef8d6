package report

import (
	"strings"
)

// eighths are the partial blocks a bar ends with, by eighths of a cell.
var eighths = []string{"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"}

// Bar is n out of maxN drawn in width cells of block characters, to the
// eighth of a cell, padded with spaces to width. A non-zero n shows at
// least an eighth.
func Bar(n, maxN, width int) string {
	if width <= 0 {
		return ""
	}
	units := 0
	if maxN > 0 {
		units = n * width * 8 / maxN
	}
	if n > 0 && units == 0 {
		units = 1
	}
	full, part := units/8, units%8
	s := strings.Repeat("█", full) + eighths[part]
	cells := full
	if part > 0 {
		cells++
	}
	return s + strings.Repeat(" ", width-cells)
}

// sparks are the eight heights of a sparkline.
var sparks = []rune("▁▂▃▄▅▆▇█")

// Sparkline draws values as one line, one character each: a space for 0,
// else the height of the value against the largest.
func Sparkline(values []int) string {
	maxV := 0
	for _, v := range values {
		maxV = max(maxV, v)
	}
	var b strings.Builder
	for _, v := range values {
		switch {
		case v <= 0:
			b.WriteByte(' ')
		default:
			b.WriteRune(sparks[min((v*len(sparks)-1)/maxV, len(sparks)-1)])
		}
	}
	return b.String()
}

// Buckets sums counts keyed by an instant (epoch ms) into n equal buckets
// over [from, to]; instants outside are left out.
func Buckets(counts map[int64]int, from, to int64, n int) []int {
	out := make([]int, n)
	if n == 0 || to < from {
		return out
	}
	// In floating point: instants may be anything a message says (one in
	// nanoseconds among milliseconds), and (at-from)*n would overflow.
	span := float64(to) - float64(from) + 1
	for at, c := range counts {
		if at < from || at > to {
			continue
		}
		i := int((float64(at) - float64(from)) / span * float64(n))
		out[min(max(i, 0), n-1)] += c
	}
	return out
}

// TermBarWidth is the width of the bars of a table drawn in width columns:
// a third of what the count and share columns leave, within 8 and 40.
func TermBarWidth(width int) int {
	return min(max((width-16)/3, 8), 40)
}
