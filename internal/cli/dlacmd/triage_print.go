package dlacmd

// dla triage's renderers: each group as the report has it (with its next
// command), the text lines for pipes, the terminal's view and the HTML
// report's rows.

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/deadletter/deadletter/internal/cli/output"
	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/report"
	"github.com/deadletter/deadletter/internal/shellword"
	"github.com/deadletter/deadletter/internal/triage"
)

// triageCommand builds a group's next command from this invocation.
type triageCommand struct {
	f       *Factory
	sel     *selectFlags
	archive string
}

// base is "dla VERB --archive A" with the AWS flags of this invocation.
func (c triageCommand) base(verb string) []string {
	words := []string{"dla", verb}
	if c.archive != "" {
		words = append(words, "--archive", c.archive)
	}
	if s := c.f.AWS; s != nil {
		if s.Profile != "" {
			words = append(words, "--profile", s.Profile)
		}
		if s.Region != "" {
			words = append(words, "--region", s.Region)
		}
		if s.EndpointURL != "" {
			words = append(words, "--endpoint-url", s.EndpointURL)
		}
	}
	return words
}

// selecting is base plus the flags that select exactly g's objects: this
// invocation's selection, g's error class and its first and last date.
func (c triageCommand) selecting(verb string, g *triage.Group) []string {
	words := append(c.base(verb), c.sel.args(false)...)
	switch {
	case g.FirstDate != "" && g.FirstDate == g.LastDate:
		words = append(words, "--date", g.FirstDate)
	case g.FirstDate != "":
		words = append(words, "--from", g.FirstDate, "--to", g.LastDate)
	}
	if g.Legacy && !c.sel.includeLegacy {
		words = append(words, "--include-legacy")
	}
	return append(words, "--error-class", g.Class)
}

func triageGroup(g *triage.Group, c triageCommand) TriageGroup {
	shown, from := g.Shown()
	out := TriageGroup{Count: g.Count, Class: g.Rule.Class, Rule: g.Rule.ID, Verdict: g.Verdict(), VerdictClass: shown, VerdictFrom: from,
		Why: g.Rule.Why, ExampleKey: g.ExampleKey, Collections: g.SortedCollections(), Needs: g.SortedNeeds()}
	if !g.Unreadable {
		class := g.Class
		out.ErrorClass = &class
	}
	if g.FirstDate != "" {
		out.FirstDate, out.LastDate = &g.FirstDate, &g.LastDate
	}
	if g.Checked {
		ready := g.Ready
		out.Ready = &ready
		out.Missing = []triage.Need{}
		for _, n := range out.Needs {
			if g.Missing[n] {
				out.Missing = append(out.Missing, n)
			}
		}
	}
	if fix := g.FixSteps(); fix != "" {
		out.Fix = &fix
	}
	out.Probe = g.Probe
	for _, n := range []int{3, 2, 1} {
		if v := g.ShortVerdict(n); !slices.Contains(out.shortVerdicts, v) {
			out.shortVerdicts = append(out.shortVerdicts, v)
		}
	}
	if !g.Unreadable {
		list := []string{"-o", "keys", "--ignore-unreadable"}
		if g.OddKeys {
			list = []string{"-o", "keys", "-0", "--ignore-unreadable"}
		}
		sel := shellword.Join(append(c.selecting("search", g), list...)...)
		out.Select = &sel
	}
	show := shellword.Join(append(c.base("show"), g.ExampleKey)...)
	switch { // the command follows the verdict shown
	case g.Unreadable, shown == triage.Unknown:
		out.Command = show
	case shown == triage.Permanent || (shown == triage.FixFirst && len(g.Needs) == 0):
		out.Command = *out.Select
	default:
		out.Command = shellword.Join(append(c.selecting("recover", g), "--dry-run")...)
	}
	return out
}

// next is a group's next step in words, for the text form.
func (g TriageGroup) next() string {
	switch {
	case g.Fix != nil:
		return *g.Fix + ", then: " + g.Command
	case g.ErrorClass == nil || g.VerdictClass == triage.Unknown:
		return "open one: " + g.Command
	case strings.Contains(g.Command, " search "):
		return "not recoverable as it is: " + g.Command + " lists them"
	}
	return g.Command
}

// printTriage writes one tab-separated line per group, for pipes: count,
// class, dates, collections, error class, verdict, example key and the
// next step, as stored (a terminal gets triageView).
func printTriage(w io.Writer, rep TriageReport) error {
	for _, g := range rep.Groups {
		fields := []string{fmt.Sprint(g.Count), string(g.Class), g.dates(), g.collections(), g.errorClass(),
			g.Verdict, "e.g. " + g.ExampleKey, "next: " + g.next()}
		if g.tried != "" { // only where the audit names some
			fields = append(fields, g.tried)
		}
		if err := output.WriteFields(w, fields...); err != nil {
			return err
		}
	}
	return nil
}

// dates are the group's first and last date folder ("-" for none).
func (g TriageGroup) dates() string {
	if g.FirstDate == nil {
		return "-"
	}
	if *g.LastDate == *g.FirstDate {
		return *g.FirstDate
	}
	return *g.FirstDate + ".." + *g.LastDate
}

// collections are the commonest collection and how many others.
func (g TriageGroup) collections() string {
	if len(g.Collections) == 0 {
		return "-"
	}
	if len(g.Collections) == 1 {
		return g.Collections[0]
	}
	return fmt.Sprintf("%s (+%d)", g.Collections[0], len(g.Collections)-1)
}

func (g TriageGroup) errorClass() string {
	if g.ErrorClass == nil {
		return "(unreadable)"
	}
	return cmp.Or(*g.ErrorClass, dla.NoErrorText)
}

// triageView is the terminal form: per group a header row (count, class,
// dates, the commonest collection and "+N", the error class cut to fit),
// the verdict naming a few records, and the next command on its own line;
// first, what to do first. The groups are shown in the order of that
// advice (retry, create, look, never as it is; the largest first in each),
// so that the "first:" line names the groups at the top; each group's
// badge is the class of its verdict (VerdictClass).
func triageView(rep TriageReport) output.TriageView {
	v := output.TriageView{Unit: "object"}
	var retry, create, look, retryG, createG, lookG, never int
	unchecked := false
	groups := slices.Clone(rep.Groups)
	slices.SortStableFunc(groups, func(a, b TriageGroup) int { return cmp.Compare(a.step(), b.step()) })
	for _, g := range groups {
		dates := "-"
		if g.FirstDate != nil {
			dates = *g.FirstDate
			switch last := *g.LastDate; {
			case last == dates:
			case len(dates) == 10 && len(last) == 10 && last[:5] == dates[:5]: // same year: 2024-03-01..03-05
				dates += ".." + last[5:]
			default:
				dates += ".." + last
			}
		}
		colls := "-"
		if len(g.Collections) > 0 {
			more := ""
			if len(g.Collections) > 1 {
				more = fmt.Sprintf(" +%d", len(g.Collections)-1)
			}
			colls = output.Cut(output.OneLine(g.Collections[0]), output.LeadCellWidth-len(more)) + more
		}
		v.Groups = append(v.Groups, output.TriageCard{Count: g.Count, Class: string(g.VerdictClass),
			Cells: []string{dates, colls, g.errorClass()}, Verdicts: g.shortVerdicts, Command: g.Command})
		switch g.step() {
		case stepCreate:
			create, createG = create+g.Count, createG+1
			unchecked = unchecked || g.Ready == nil
		case stepLook:
			look, lookG = look+g.Count, lookG+1
		case stepRetry:
			retry, retryG = retry+g.Count, retryG+1
		default:
			never += g.Count
		}
	}
	if retry > 0 {
		v.Steps = append(v.Steps, fmt.Sprintf("retry %s now (%s): each dla recover with --dry-run, then without",
			output.Plural(retry, "object"), output.Plural(retryG, "group")))
	}
	if create > 0 {
		v.Steps = append(v.Steps, fmt.Sprintf("create the records %s need (%s) and retry them",
			output.Plural(create, "object"), output.Plural(createG, "group")))
	}
	if look > 0 {
		v.Steps = append(v.Steps, fmt.Sprintf("open one object of each unknown or unreadable group (%s)", output.Plural(lookG, "group")))
	}
	v.Idle = "nothing failed in this selection"
	if never > 0 {
		v.Idle = fmt.Sprintf("nothing to retry: %s will never succeed as they are", output.Plural(never, "object"))
	}
	switch {
	case rep.ReadinessError != nil:
		v.Notes = append(v.Notes, *rep.ReadinessError)
	case unchecked:
		v.Notes = append(v.Notes, "readiness not checked: no database given (--database-url or --db-secret looks up what exists now)")
	}
	return v
}

// The steps of triage's advice, in the order it gives them.
const (
	stepRetry = iota
	stepCreate
	stepLook
	stepNever
)

// step is which of the advice's steps the group is in: retry what its
// command recovers, create what its fix names, look at one of the unknown
// and unreadable, and leave what will never succeed as it is.
func (g TriageGroup) step() int {
	switch {
	case g.Fix != nil:
		return stepCreate
	case g.VerdictClass == triage.Unknown || g.ErrorClass == nil:
		return stepLook
	case strings.HasPrefix(g.Command, "dla recover "):
		return stepRetry
	}
	return stepNever
}

// triageRows are a triage's groups as the report page shows them.
func triageRows(t *triage.Triage, c triageCommand) []report.TriageRow {
	var rows []report.TriageRow
	for _, g := range t.Groups() {
		tg := triageGroup(g, c)
		what := "(unreadable objects)"
		if tg.ErrorClass != nil {
			what = cmp.Or(*tg.ErrorClass, dla.NoErrorText)
		}
		rows = append(rows, report.TriageRow{Count: tg.Count, Class: string(tg.VerdictClass), What: what, Verdict: tg.Verdict, Next: tg.next()})
	}
	return rows
}
