package report

import (
	"cmp"
	"fmt"
	"html/template"
	"slices"
	"time"
)

// PushDLQ is what pushdlq inspect read, for its report.
type PushDLQ struct {
	Queue                      string
	Visible, InFlight, Delayed int64
	Scanned                    int
	Sample                     bool
	// CodeMinutes counts messages per error code (-1: none) per createdAt
	// minute (epoch ms at the minute's start).
	CodeMinutes map[int]map[int64]int
	CodeName    func(code int) string
	ByPriority  map[int]int
	Malformed   []Count // reason, messages
	// Window is the suggested window (epoch ms, inclusive), nil when none;
	// WindowArgs are the replay flags that select it.
	Window     *[2]int64
	WindowArgs string
}

// Chart ids of the push DLQ page.
const (
	ChartCreatedAt = "created-at"
	ChartPriority  = "priority"
)

// bucketSizes are the histogram's bucket widths, in minutes: the smallest
// that keeps the chart to MaxBuckets columns.
var bucketSizes = []int64{1, 5, 10, 15, 30, 60, 180, 360, 720, 1440, 10080}

// MaxBuckets bounds the columns of the createdAt histogram.
const MaxBuckets = 72

// Histogram is the createdAt histogram: bucket labels, one series per error
// code (codes by count; at most TopClasses, the rest as one), and the
// bucket width in minutes.
func (p PushDLQ) Histogram() (labels []string, series []Series, first int64, minutes int64) {
	var lo, hi int64
	seen := false
	totals := map[int]int{}
	for code, per := range p.CodeMinutes {
		for m, n := range per {
			if !seen {
				lo, hi, seen = m, m, true
			}
			lo, hi = min(lo, m), max(hi, m)
			totals[code] += n
		}
	}
	if !seen {
		return nil, nil, 0, 1
	}
	// Spans in floating point: createdAt is whatever a message says, and a
	// bogus one (0, or nanoseconds) must widen the buckets, not overflow
	// or multiply them.
	span := (float64(hi)-float64(lo))/60_000 + 1
	minutes = 0
	for _, b := range bucketSizes {
		if span/float64(b) < MaxBuckets-1 {
			minutes = b
			break
		}
	}
	if minutes == 0 { // wider than the widest: as wide as it takes
		minutes = int64(span/(MaxBuckets-2)) + 1
	}
	width := minutes * 60_000
	first = lo - lo%width
	if lo < 0 && lo%width != 0 {
		first -= width
	}
	n := int((float64(hi)-float64(first))/float64(width)) + 1
	n = min(n, MaxBuckets)
	for i := 0; i < n; i++ {
		labels = append(labels, time.UnixMilli(first+int64(i)*width).UTC().Format("01-02 15:04"))
	}
	codes := make([]int, 0, len(totals))
	for c := range totals {
		codes = append(codes, c)
	}
	slices.SortFunc(codes, func(a, b int) int { return cmp.Or(cmp.Compare(totals[b], totals[a]), cmp.Compare(a, b)) })
	other := Series{Name: "other codes", Values: make([]int, n)}
	for i, c := range codes {
		s := Series{Name: p.codeLabel(c), Values: make([]int, n)}
		for m, k := range p.CodeMinutes[c] {
			s.Values[min(max(int((float64(m)-float64(first))/float64(width)), 0), n-1)] += k
		}
		if i < TopClasses {
			series = append(series, s)
			continue
		}
		for j, v := range s.Values {
			other.Values[j] += v
		}
	}
	if len(codes) > TopClasses {
		series = append(series, other)
	}
	return labels, series, first, minutes
}

func (p PushDLQ) codeLabel(code int) string {
	if code < 0 {
		return "no errorCode"
	}
	if p.CodeName != nil {
		return fmt.Sprintf("%d %s", code, p.CodeName(code))
	}
	return fmt.Sprint(code)
}

// PushDLQPage lays out the push DLQ report.
func PushDLQPage(p PushDLQ, title string, subtitle []string) Page {
	num := func(n int) Cell { return Cell{Text: fmt.Sprint(n)} }
	txt := func(s string) Cell { return Cell{Text: s} }
	page := Page{Title: title, Subtitle: subtitle}

	labels, series, first, minutes := p.Histogram()
	hist := Section{ID: ChartCreatedAt, Title: "createdAt, by error code",
		Note: fmt.Sprintf("Messages per %s of createdAt (UTC), stacked by error code.", bucketName(minutes))}
	if len(labels) > 0 {
		hist.Note += " " + spanNote(series, first, minutes, len(labels))
	}
	var band *Band
	if p.Window != nil && len(labels) > 0 {
		width := minutes * 60_000
		from := int(max(float64(p.Window[0])-float64(first), 0) / float64(width))
		to := int(max(float64(p.Window[1])-float64(first), 0) / float64(width))
		to = min(to, len(labels)-1)
		if p.Window[1] >= first && from < len(labels) {
			band = &Band{From: from, To: to, Label: "suggested window"}
			hist.Note += " The shaded band is the suggested window: " + p.WindowArgs + "."
		}
	}
	if len(labels) > 0 {
		hist.Chart = Legend(series) + template.HTML(StackedBand(ChartCreatedAt, hist.Title, labels, series, 1100, 300, band))
	}
	hist.Table.Header = append([]string{"from (UTC)"}, seriesNames(series)...)
	for i, l := range labels {
		row := []Cell{txt(l)}
		for _, s := range series {
			row = append(row, num(s.Values[i]))
		}
		hist.Table.Rows = append(hist.Table.Rows, row)
	}

	prios := make([]int, 0, len(p.ByPriority))
	for pr := range p.ByPriority {
		prios = append(prios, pr)
	}
	slices.Sort(prios)
	prio := Section{ID: ChartPriority, Title: "Messages by priority",
		Note: "Each priority is replayed to its own queue, ${base}P<priority>."}
	pl, pv := make([]string, len(prios)), make([]int, len(prios))
	prio.Table.Header = []string{"priority", "messages"}
	for i, pr := range prios {
		pl[i], pv[i] = fmt.Sprintf("P%d", pr), p.ByPriority[pr]
		prio.Table.Rows = append(prio.Table.Rows, []Cell{txt(pl[i]), num(pv[i])})
	}
	if len(prios) > 0 {
		prio.Chart = template.HTML(Bars(ChartPriority, prio.Title, pl, pv, 1100))
	}

	bad := Section{ID: "malformed", Title: "Malformed messages (never replayed)", Open: true,
		Note: "Messages whose body cannot be replayed, by reason."}
	bad.Table.Header = []string{"reason", "messages"}
	for _, m := range p.Malformed {
		bad.Table.Rows = append(bad.Table.Rows, []Cell{txt(m.Label), num(m.N)})
	}
	page.Sections = []Section{hist, prio, bad}
	return page
}

func bucketName(minutes int64) string {
	switch {
	case minutes == 1:
		return "minute"
	case minutes < 60:
		return fmt.Sprintf("%d minutes", minutes)
	case minutes == 60:
		return "hour"
	case minutes < 1440:
		return fmt.Sprintf("%d hours", minutes/60)
	case minutes == 1440:
		return "day"
	}
	return "week"
}

// spanNote says what the histogram spans (only the createdAt range that
// holds messages, never a fixed day) and its longest stretch without a
// message, when that is three buckets or more, so that a gap reads as one.
func spanNote(series []Series, first, minutes int64, n int) string {
	width := minutes * 60_000
	at := func(i int) string { return time.UnixMilli(first + int64(i)*width).UTC().Format("2006-01-02 15:04") }
	note := fmt.Sprintf("It spans the messages' createdAt, %s to %s.", at(0), at(n))
	bestFrom, bestLen, runFrom := -1, 0, -1
	for i := 0; i <= n; i++ {
		empty := i < n
		if i < n {
			for _, s := range series {
				if s.Values[i] > 0 {
					empty = false
					break
				}
			}
		}
		switch {
		case empty && runFrom < 0:
			runFrom = i
		case !empty && runFrom >= 0:
			if i-runFrom > bestLen {
				bestFrom, bestLen = runFrom, i-runFrom
			}
			runFrom = -1
		}
	}
	if bestLen >= 3 {
		note += fmt.Sprintf(" No message was created from %s to %s.", at(bestFrom), at(bestFrom+bestLen))
	}
	return note
}
