package report

import "strconv"

// TriageRow is one group of a triage, as the report pages show it.
type TriageRow struct {
	Count   int
	Class   string // transient, fix-first, permanent, unknown
	What    string // the error class, or the code and its window
	Verdict string
	Next    string // the next step, with its command
}

// TriageSection is the page's first section: what failed, whether a retry
// will help, and the command to run (docs/triage.md).
func TriageSection(rows []TriageRow, note string) Section {
	s := Section{ID: "triage", Title: "Triage: what to do with each group", Open: true,
		Note: note + " Verdicts come from the rule table in docs/triage.md; each command selects exactly its group."}
	s.Table.Header = []string{"objects", "class", "group", "verdict", "next"}
	for _, r := range rows {
		s.Table.Rows = append(s.Table.Rows, []Cell{{Text: strconv.Itoa(r.Count)}, {Text: r.Class}, {Text: shorten(r.What, 200)}, {Text: r.Verdict}, {Text: r.Next, Code: true}})
	}
	return s
}
