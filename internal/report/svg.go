// Package report renders triage reports: self-contained HTML pages (inline
// SVG and CSS, no script, no network request) for the Dead Letter Archive
// and the push DLQ, and bars for the terminal. It is pure: data in, bytes
// out.
package report

import (
	"fmt"
	"html"
	"math"
	"strings"
	"unicode/utf8"
)

// Palette is the series colours, in order, chosen to stay distinct for the
// common forms of colour blindness and in greyscale print (Okabe–Ito).
var Palette = []string{"#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000", "#999999"}

// Series is one stacked layer or one group of bars.
type Series struct {
	Name   string
	Values []int // one per category
}

// Stacked draws a vertical stacked bar chart: one column per category, one
// rect per non-zero (category, series) pair. Every rect has class "bar",
// data-chart, data-category, data-series and data-value, and a <title>.
func Stacked(id, title string, categories []string, series []Series, width, height int) string {
	return StackedBand(id, title, categories, series, width, height, nil)
}

// Band marks a run of categories, From to To inclusive (a suggested window,
// say): a shaded rect behind the bars, with a label.
type Band struct {
	From, To int
	Label    string
}

// StackedBand is Stacked with a band drawn behind the bars (nil: none).
func StackedBand(id, title string, categories []string, series []Series, width, height int, band *Band) string {
	const left, bottom, top, right = 48, 64, 12, 12
	plotW, plotH := float64(width-left-right), float64(height-top-bottom)
	total := make([]int, len(categories))
	for _, s := range series {
		for i, v := range s.Values {
			total[i] += v
		}
	}
	maxV := 0
	for _, t := range total {
		maxV = max(maxV, t)
	}
	scale := niceMax(maxV)
	var b strings.Builder
	open(&b, id, title, width, height)
	axisY(&b, left, top, plotW, plotH, scale)
	step := plotW / float64(max(len(categories), 1))
	barW := math.Max(step*0.7, 1)
	if band != nil && band.From <= band.To && band.From >= 0 && band.To < len(categories) {
		x := float64(left) + float64(band.From)*step
		fmt.Fprintf(&b, `<rect class="band" data-from="%s" data-to="%s" x="%.1f" y="%d" width="%.1f" height="%.1f" fill="#E69F00" fill-opacity="0.18" stroke="#D55E00" stroke-dasharray="4 3"><title>%s</title></rect>`,
			esc(categories[band.From]), esc(categories[band.To]), x, top, float64(band.To-band.From+1)*step, plotH, esc(band.Label))
		lx, anchor := x+3, "start" // in the right half, the label reads leftwards from the band's end
		if x > float64(width)/2 {
			lx, anchor = x+float64(band.To-band.From+1)*step-3, "end"
		}
		fmt.Fprintf(&b, `<text class="band-label" x="%.1f" y="%d" text-anchor="%s">%s</text>`, lx, top+11, anchor, esc(band.Label))
	}
	for i, c := range categories {
		x := float64(left) + float64(i)*step + (step-barW)/2
		y := float64(top) + plotH
		fmt.Fprintf(&b, `<g class="column" data-category="%s">`, esc(c))
		for si, s := range series {
			v := s.Values[i]
			if v == 0 {
				continue
			}
			h := plotH * float64(v) / float64(scale)
			y -= h
			fmt.Fprintf(&b, `<rect class="bar" data-chart="%s" data-category="%s" data-series="%s" data-value="%d" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s, %s: %d</title></rect>`,
				esc(id), esc(c), esc(s.Name), v, x, y, barW, h, Palette[si%len(Palette)], esc(c), esc(s.Name), v)
		}
		b.WriteString(`</g>`)
		// Label every category when they fit, else about twelve of them.
		if every := max(1, len(categories)/12); i%every == 0 {
			fmt.Fprintf(&b, `<text class="tick" x="%.1f" y="%.1f" transform="rotate(-45 %.1f %.1f)" text-anchor="end">%s</text>`,
				x+barW/2, float64(top)+plotH+14, x+barW/2, float64(top)+plotH+14, esc(c))
		}
	}
	b.WriteString(`</svg>`)
	return b.String()
}

// Bars draws a horizontal bar chart, one bar per label, longest first as
// given. Bars carry the same classes and data attributes as Stacked's.
func Bars(id, title string, labels []string, values []int, width int) string {
	const rowH, labelW, right = 22, 300, 60
	height := rowH*len(labels) + 8
	maxV := 0
	for _, v := range values {
		maxV = max(maxV, v)
	}
	plotW := float64(width - labelW - right)
	var b strings.Builder
	open(&b, id, title, width, height)
	for i, l := range labels {
		y := 4 + i*rowH
		w := 0.0
		if maxV > 0 {
			w = math.Max(plotW*float64(values[i])/float64(maxV), 1)
		}
		fmt.Fprintf(&b, `<text class="label" x="%d" y="%d" text-anchor="end">%s</text>`, labelW-6, y+15, esc(shorten(l, 40)))
		fmt.Fprintf(&b, `<rect class="bar" data-chart="%s" data-category="%s" data-value="%d" x="%d" y="%d" width="%.1f" height="%d" fill="%s"><title>%s: %d</title></rect>`,
			esc(id), esc(l), values[i], labelW, y+3, w, rowH-6, Palette[0], esc(l), values[i])
		fmt.Fprintf(&b, `<text class="value" x="%.1f" y="%d">%d</text>`, float64(labelW)+w+4, y+15, values[i])
	}
	b.WriteString(`</svg>`)
	return b.String()
}

func open(b *strings.Builder, id, title string, width, height int) {
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" id="%s" class="chart" role="img" aria-labelledby="%s-title" viewBox="0 0 %d %d" width="%d" height="%d"><title id="%s-title">%s</title>`,
		esc(id), esc(id), width, height, width, height, esc(id), esc(title))
}

func axisY(b *strings.Builder, left, top int, plotW, plotH float64, scale int) {
	for i := 0; i <= 4; i++ {
		y := float64(top) + plotH - plotH*float64(i)/4
		fmt.Fprintf(b, `<line class="grid" x1="%d" x2="%.1f" y1="%.1f" y2="%.1f"/>`, left, float64(left)+plotW, y, y)
		fmt.Fprintf(b, `<text class="tick" x="%d" y="%.1f" text-anchor="end">%d</text>`, left-4, y+4, scale*i/4)
	}
}

// niceMax rounds a maximum up to a value whose quarters are whole numbers
// that read well: 4, 8, 20, 40, 100, 200, 400 ...
func niceMax(v int) int {
	if v <= 4 {
		return 4
	}
	p := 1
	for p*10 < v {
		p *= 10
	}
	for _, m := range []int{1, 2, 4, 8, 10} {
		if n := m * p; n >= v && n%4 == 0 {
			return n
		}
	}
	return ((v + 3) / 4) * 4
}

// esc escapes text for HTML and SVG (see clean).
func esc(s string) string { return html.EscapeString(clean(s)) }

// clean makes archived text safe to show: line breaks and tabs become
// spaces, other control characters are shown as \xNN (a byte that is not
// UTF-8 as itself) and the bidirectional controls and line separators as
// \uNNNN, instead of being passed on. html/template escapes markup, not
// these: U+202E in a key shows ".../k\u202egnp.txt" where the browser would
// have drawn ".../ktxt.png", as the terminal does (output.Escape).
func clean(s string) string {
	if strings.IndexFunc(s, isControl) < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == '\n' || r == '\r' || r == '\t':
			b.WriteByte(' ')
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case isBidiOrSeparator(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			fmt.Fprintf(&b, `\x%02x`, r)
		default: // U+FFFD itself among the rest
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// isControl: what clean changes. U+FFFD itself (how dla.ErrorClass shows a
// control character) is text; RuneError stands here for a byte that is not
// UTF-8, which strings.IndexFunc reports as such.
func isControl(r rune) bool {
	return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == utf8.RuneError || isBidiOrSeparator(r)
}

// isBidiOrSeparator: the bidirectional overrides, embeddings, isolates and
// marks, which make a page show text in an order other than its
// characters', and the line and paragraph separators.
func isBidiOrSeparator(r rune) bool {
	return (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) || r == 0x200e || r == 0x200f || r == 0x061c ||
		r == 0x2028 || r == 0x2029
}

func shorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
