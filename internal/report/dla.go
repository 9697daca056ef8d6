package report

import (
	"cmp"
	"fmt"
	"html/template"
	"slices"

	"github.com/deadletter/deadletter/internal/dla"
)

// TopClasses is how many error classes the daily chart stacks; the rest
// are one "other" layer.
const TopClasses = 6

// DLA collects a selection of archive objects into the report's numbers.
type DLA struct {
	perDay     map[string]map[string]int // date → error class → objects
	classes    map[string]int
	examples   map[string]Example
	collection map[string]int
	workflow   map[string]int
	granules   map[string]int
	areaDay    map[string][2]int // date → sqs, failed-sqs
	unreadable []Unreadable
	objects    int
}

// Example is one object of an error class, to show and to open.
type Example struct {
	Key, Error string
}

// Unreadable is an object that could not be read or decoded, and why.
type Unreadable struct {
	Key, Reason string
}

// NewDLA returns an empty collector.
func NewDLA() *DLA {
	return &DLA{perDay: map[string]map[string]int{}, classes: map[string]int{}, examples: map[string]Example{},
		collection: map[string]int{}, workflow: map[string]int{}, granules: map[string]int{}, areaDay: map[string][2]int{}}
}

// NoError is the class of objects without an error.
const NoError = dla.NoErrorText

// Add counts one decoded object of the selection; class is its
// dla.ErrorClass, which the caller computes once per object and shares
// with triage.
func (r *DLA) Add(d *dla.Decoded, class string) {
	r.objects++
	if class == "" {
		class = NoError
	}
	day := d.Date()
	if r.perDay[day] == nil {
		r.perDay[day] = map[string]int{}
	}
	r.perDay[day][class]++
	r.classes[class]++
	if _, ok := r.examples[class]; !ok {
		r.examples[class] = Example{Key: d.Key, Error: d.Error}
	}
	r.collection[orNone(d.CollectionID)]++
	r.workflow[orNone(d.StateMachineName())]++
	for _, g := range d.Granules {
		if g != "" {
			r.granules[g]++
		}
	}
}

// Objects is how many objects Add counted.
func (r *DLA) Objects() int { return r.objects }

// AddArea counts one object of sqs/ (failed false) or failed-sqs/ by date,
// for the chart that sets the two side by side.
func (r *DLA) AddArea(date string, failed bool) {
	c := r.areaDay[date]
	if failed {
		c[1]++
	} else {
		c[0]++
	}
	r.areaDay[date] = c
}

// AddUnreadable records an object that could not be read or decoded.
func (r *DLA) AddUnreadable(key, reason string) {
	r.unreadable = append(r.unreadable, Unreadable{Key: key, Reason: reason})
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// Count is a label and how many objects have it.
type Count struct {
	Label string
	N     int
}

// DLAData is the report's numbers, in the order they are drawn.
type DLAData struct {
	Objects     int
	Days        []string
	DayClasses  []Series // TopClasses classes and "other", one value per day
	DayTotals   []int
	Classes     []ClassRow
	Collections []Count
	Workflows   []Count
	Granules    []Count // the granules in the most objects, at most TopGranules
	AreaDays    []string
	Areas       []Series // sqs/, failed-sqs/
	Unreadable  []Unreadable
}

// ClassRow is one error class with its count and an example.
type ClassRow struct {
	Class string
	N     int
	Example
}

// TopGranules bounds the granule chart.
const TopGranules = 15

// TopBars bounds the other bar charts (their tables list every row).
const TopBars = 25

// Data sorts and shapes what was collected.
func (r *DLA) Data() DLAData {
	out := DLAData{Objects: r.objects, Unreadable: r.unreadable}
	out.Days = sortedKeys(r.perDay)
	classes := byCount(r.classes)
	for _, c := range classes {
		out.Classes = append(out.Classes, ClassRow{Class: c.Label, N: c.N, Example: r.examples[c.Label]})
	}
	top := classes
	if len(top) > TopClasses {
		top = top[:TopClasses]
	}
	other := Series{Name: "other classes", Values: make([]int, len(out.Days))}
	for _, c := range top {
		out.DayClasses = append(out.DayClasses, Series{Name: c.Label, Values: make([]int, len(out.Days))})
	}
	out.DayTotals = make([]int, len(out.Days))
	for i, day := range out.Days {
		for class, n := range r.perDay[day] {
			out.DayTotals[i] += n
			j := slices.IndexFunc(top, func(c Count) bool { return c.Label == class })
			if j >= 0 {
				out.DayClasses[j].Values[i] += n
			} else {
				other.Values[i] += n
			}
		}
	}
	if len(classes) > len(top) {
		out.DayClasses = append(out.DayClasses, other)
	}
	out.Collections = byCount(r.collection)
	out.Workflows = byCount(r.workflow)
	out.Granules = byCount(r.granules)
	if len(out.Granules) > TopGranules {
		out.Granules = out.Granules[:TopGranules]
	}
	out.AreaDays = sortedKeys(r.areaDay)
	out.Areas = []Series{{Name: "sqs/", Values: make([]int, len(out.AreaDays))}, {Name: "failed-sqs/", Values: make([]int, len(out.AreaDays))}}
	for i, d := range out.AreaDays {
		out.Areas[0].Values[i], out.Areas[1].Values[i] = r.areaDay[d][0], r.areaDay[d][1]
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// byCount orders counts by count, then label.
func byCount(m map[string]int) []Count {
	out := make([]Count, 0, len(m))
	for k, n := range m {
		out = append(out, Count{Label: k, N: n})
	}
	slices.SortFunc(out, func(a, b Count) int { return cmp.Or(cmp.Compare(b.N, a.N), cmp.Compare(a.Label, b.Label)) })
	return out
}

// Chart ids of the DLA page (the browser test counts their bars).
const (
	ChartPerDay      = "per-day"
	ChartErrors      = "errors"
	ChartCollections = "collections"
	ChartWorkflows   = "workflows"
	ChartGranules    = "granules"
	ChartAreas       = "areas"
)

// DLAPage lays out the DLA report.
func DLAPage(d DLAData, title string, subtitle []string, links *Links) Page {
	num := func(n int) Cell { return Cell{Text: fmt.Sprint(n)} }
	txt := func(s string) Cell { return Cell{Text: s} }
	p := Page{Title: title, Subtitle: subtitle}

	perDay := Section{ID: ChartPerDay, Title: "Objects per day, by error class",
		Note: fmt.Sprintf("%d objects over %d days; the %d most frequent error classes are drawn, the rest as one layer.", d.Objects, len(d.Days), TopClasses)}
	if len(d.Days) > 0 {
		perDay.Chart = Legend(d.DayClasses) + template.HTML(Stacked(ChartPerDay, perDay.Title, d.Days, d.DayClasses, 1100, 300))
	}
	perDay.Table.Header = append([]string{"date", "objects"}, seriesNames(d.DayClasses)...)
	for i, day := range d.Days {
		row := []Cell{txt(day), num(d.DayTotals[i])}
		for _, s := range d.DayClasses {
			row = append(row, num(s.Values[i]))
		}
		perDay.Table.Rows = append(perDay.Table.Rows, row)
	}

	errs := Section{ID: ChartErrors, Title: "Error classes", Open: true,
		Note: "Errors that differ only in ids, ARNs and numbers are one class. Each row shows one object's full error and links to it."}
	labels, values := make([]string, len(d.Classes)), make([]int, len(d.Classes))
	errs.Table.Header = []string{"objects", "class", "an example's error", "the example"}
	for i, c := range d.Classes {
		labels[i], values[i] = c.Class, c.N
		errs.Table.Rows = append(errs.Table.Rows, []Cell{num(c.N), txt(shorten(c.Class, 160)), txt(shorten(c.Error, 300)), links.Key(c.Key)})
	}
	if len(d.Classes) > 0 {
		errs.Chart = template.HTML(Bars(ChartErrors, errs.Title, capped(labels), capped(values), 1100))
	}
	if len(d.Classes) > TopBars {
		errs.Note += fmt.Sprintf(" The chart shows the %d largest of %d classes.", TopBars, len(d.Classes))
	}

	p.Sections = append(p.Sections, perDay, errs,
		countSection(ChartCollections, "Objects by collection", "collection", d.Collections, num),
		countSection(ChartWorkflows, "Objects by workflow (state machine)", "workflow", d.Workflows, num),
		countSection(ChartGranules, fmt.Sprintf("The granules in the most objects (at most %d)", TopGranules), "granule", d.Granules, num))

	areas := Section{ID: ChartAreas, Title: "sqs/ against failed-sqs/, per day",
		Note: "sqs/ holds what has not been recovered; failed-sqs/ what a recovery could not write."}
	if len(d.AreaDays) > 0 {
		areas.Chart = Legend(d.Areas) + template.HTML(Stacked(ChartAreas, areas.Title, d.AreaDays, d.Areas, 1100, 240))
	}
	areas.Table.Header = []string{"date", "sqs/", "failed-sqs/"}
	for i, day := range d.AreaDays {
		areas.Table.Rows = append(areas.Table.Rows, []Cell{txt(day), num(d.Areas[0].Values[i]), num(d.Areas[1].Values[i])})
	}

	unreadable := Section{ID: "unreadable", Title: fmt.Sprintf("Unreadable objects (%d)", len(d.Unreadable)), Open: true,
		Note: "Objects that could not be read or decoded, with the reason. They are not in the charts above."}
	unreadable.Table.Header = []string{"object", "reason"}
	for _, u := range d.Unreadable {
		unreadable.Table.Rows = append(unreadable.Table.Rows, []Cell{links.Key(u.Key), txt(u.Reason)})
	}
	p.Sections = append(p.Sections, areas, unreadable)
	p.Commands = links.Commands()
	return p
}

func countSection(id, title, what string, counts []Count, num func(int) Cell) Section {
	s := Section{ID: id, Title: title}
	labels, values := make([]string, len(counts)), make([]int, len(counts))
	s.Table.Header = []string{what, "objects"}
	for i, c := range counts {
		labels[i], values[i] = c.Label, c.N
		s.Table.Rows = append(s.Table.Rows, []Cell{{Text: c.Label, Code: what == "granule"}, num(c.N)})
	}
	if len(counts) > 0 {
		s.Chart = template.HTML(Bars(id, title, capped(labels), capped(values), 1100))
	}
	if len(counts) > TopBars {
		s.Note = fmt.Sprintf("The chart shows the %d largest of %d.", TopBars, len(counts))
	}
	return s
}

func capped[T any](s []T) []T {
	if len(s) > TopBars {
		return s[:TopBars]
	}
	return s
}

func seriesNames(series []Series) []string {
	out := make([]string, len(series))
	for i, s := range series {
		out[i] = s.Name
	}
	return out
}
