package report

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// TriageRow is one group of a triage, as the report pages show it.
type TriageRow struct {
	Count   int
	Class   string // transient, fix-first, permanent, unknown
	What    string // the error class, or the code and its window
	Verdict string
	Next    string // the next step, with its command
	// Command is the command alone, when the caller has it apart from
	// Next; without it the command is taken from Next's known forms
	// ("CMD", "open one: CMD", "not recoverable as it is: CMD lists them",
	// "FIX, then: CMD").
	Command string
}

// TriageSection is the page's first section: what failed, whether a retry
// will help, and the command to run (docs/triage.md). Each group is a block,
// not a table row, so that it reads on a phone as on a desktop: the count and
// the class as a badge, the error class, the verdict with long lists of names
// folded, and the command in a block of its own that one click selects whole.
func TriageSection(rows []TriageRow, note string) Section {
	return TriageSectionCounting(rows, note, "object")
}

// TriageSectionCounting is TriageSection for groups of unit ("message" for
// a DLQ's triage).
func TriageSectionCounting(rows []TriageRow, note, unit string) Section {
	s := Section{ID: "triage", Title: "Triage: what to do with each group", Open: true,
		Note: note + " Verdicts come from the rule table in docs/triage.md; each command selects exactly its group, and a click on it selects the whole of it to copy."}
	v := &TriageView{Unit: unit}
	byClass := map[string]*ClassCount{}
	for _, r := range rows {
		c := byClass[r.Class]
		if c == nil {
			c = &ClassCount{Class: r.Class}
			byClass[r.Class] = c
		}
		c.Groups++
		c.Objects += r.Count
		g := TriageGroup{Count: r.Count, Class: r.Class, Next: r.Next, What: shorten(r.What, whatShown), Verdict: foldLists(r.Verdict)}
		if g.What != r.What {
			g.WhatWhole = r.What
		}
		step, cmd := splitNext(r.Next, r.Command)
		then, ok := strings.CutSuffix(step, ", then:")
		g.Step, g.Command = foldLists(then), cmd
		if ok {
			g.Step = append(g.Step, Part{Text: ", then:"})
		}
		for i, p := range g.Step {
			for _, q := range g.Verdict {
				if p.More() > 0 && p.Kind == q.Kind && slices.Equal(p.Shown, q.Shown) && slices.Equal(p.Folded, q.Folded) && p.Unlisted == q.Unlisted {
					g.Step[i].Above = true
				}
			}
		}
		v.Groups = append(v.Groups, g)
	}
	for _, class := range classOrder {
		if c := byClass[class]; c != nil {
			v.Summary = append(v.Summary, *c)
			delete(byClass, class)
		}
	}
	for _, r := range rows { // a class outside the four, in the order met
		if c := byClass[r.Class]; c != nil {
			v.Summary = append(v.Summary, *c)
			delete(byClass, r.Class)
		}
	}
	s.Triage = v
	return s
}

// whatShown is how much of an error class a group's heading shows; the rest
// is behind a <details> (and whole in the command).
const whatShown = 160

// classOrder is the summary's order: what to do first.
var classOrder = []string{"transient", "fix-first", "permanent", "unknown"}

// TriageView is what the page template draws for a triage section.
type TriageView struct {
	Unit    string       // what a group counts: "object", "message"
	Summary []ClassCount // objects and groups of each class
	Groups  []TriageGroup
}

// ClassCount is one class's share of a triage.
type ClassCount struct {
	Class           string
	Objects, Groups int
}

// TriageGroup is one group as drawn.
type TriageGroup struct {
	Count           int
	Class           string
	What, WhatWhole string // WhatWhole: the whole error class when What is cut
	Verdict, Step   []Part // Step: the words before the command
	Command         string // "": no command
	Next            string // the whole next step, as triage prints it
}

// Part is a run of text, or a list of names of which the first are shown
// and the rest folded: "providers A, B, C and 4 more", with the 4 in a
// <details> below the line.
type Part struct {
	Text     string
	Kind     string // "providers"
	Shown    []string
	Folded   []string
	Unlisted int  // names triage itself left out ("and N more")
	Above    bool // the same list is folded in the verdict: no second <details>
}

// More is how many names the fold holds.
func (p Part) More() int { return len(p.Folded) + p.Unlisted }

// BadgeClass is the CSS class of a triage class's badge: one of the four,
// or "other" (never the archived or computed text itself).
func BadgeClass(class string) string {
	for _, c := range classOrder {
		if c == class {
			return c
		}
	}
	return "other"
}

// splitNext takes the command out of a next step: the words before it (and
// after it, as "lists them") stay in the step.
func splitNext(next, command string) (step, cmd string) {
	if command != "" {
		if i := strings.Index(next, command); i >= 0 {
			step = strings.TrimSpace(next[:i] + next[i+len(command):])
		}
		return stepLabel(step), command
	}
	isCmd := func(s string) bool { return strings.HasPrefix(s, "dla ") || strings.HasPrefix(s, "pushdlq ") }
	switch {
	case isCmd(next):
		return "Run:", next
	case strings.HasPrefix(next, "open one: ") && isCmd(next[len("open one: "):]):
		return "Open one:", next[len("open one: "):]
	case strings.HasPrefix(next, "not recoverable as it is: ") && strings.HasSuffix(next, " lists them") &&
		isCmd(next[len("not recoverable as it is: "):]):
		return "Not recoverable as it is; to list them:", strings.TrimSuffix(next[len("not recoverable as it is: "):], " lists them")
	}
	if i := strings.Index(next, ", then: "); i >= 0 && isCmd(next[i+len(", then: "):]) {
		return stepLabel(next[:i] + ", then:"), next[i+len(", then: "):]
	}
	return stepLabel(next), ""
}

func stepLabel(s string) string {
	if s == "" {
		return "Run:"
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// A list of names as triage writes them: "providers A, B, C and 4 more",
// "collection MOD09GQ___006", "granules G1 (collection_cumulus_id 3), G2".
const nameItem = `[^\s;(),]+(?: \(collection_cumulus_id [^\s()]*\))?`

var namesPattern = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\b(collections?|providers?|executions?|pdrs?|granules?|async operations?) (` +
		nameItem + `(?:, ` + nameItem + `)*)(?: and (\d+) more)?`)
})

// foldLists splits text into runs of text and lists of names, folding a
// list of more than foldAt names, or of more than foldChars characters,
// after its first names.
func foldLists(text string) []Part {
	var parts []Part
	at := 0
	for _, m := range namesPattern().FindAllStringSubmatchIndex(text, -1) {
		kind, names := text[m[2]:m[3]], strings.Split(text[m[4]:m[5]], ", ")
		unlisted := 0
		if m[6] >= 0 {
			unlisted, _ = strconv.Atoi(text[m[6]:m[7]])
		}
		if len(names)+unlisted <= foldAt {
			continue
		}
		shown, n := 0, 0
		for shown < len(names) && shown < foldShown && (shown == 0 || n+len(names[shown]) <= foldChars) {
			n += len(names[shown])
			shown++
		}
		if shown == len(names) && unlisted == 0 {
			continue
		}
		if at < m[0] {
			parts = append(parts, Part{Text: text[at:m[0]]})
		}
		parts = append(parts, Part{Kind: kind, Shown: names[:shown], Folded: names[shown:], Unlisted: unlisted})
		at = m[1]
	}
	if at < len(text) {
		parts = append(parts, Part{Text: text[at:]})
	}
	return parts
}

const (
	foldAt    = 4   // a list of up to this many names is shown whole
	foldShown = 3   // else its first names are shown,
	foldChars = 100 // as many of them as fit in this many characters
)
