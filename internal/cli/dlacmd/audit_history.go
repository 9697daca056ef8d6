package dlacmd

import (
	"context"
	"fmt"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/audit"
	"github.com/deadletter/deadletter/internal/cli/historycmd"
	"github.com/deadletter/deadletter/internal/cli/output"
	"github.com/deadletter/deadletter/internal/dla"
)

// auditHistory is what the archive's audit records say, read once per
// command (trace, triage): every recorded run with its items, and for
// each key how many recover runs tried it.
type auditHistory struct {
	runs []audit.Run
	// tries counts, per key, the recover runs whose items name it as
	// their key or where they moved it.
	tries map[string]int
	// Problem says in one line why the audit could not be read ("":
	// it was, or there is none).
	Problem string
}

// readAuditHistory reads the archive's audit folder. No folder: an empty
// history, nothing said. One that cannot be read (permissions): Problem.
func readAuditHistory(ctx context.Context, store archive.Store, layout dla.Layout) *auditHistory {
	h := &auditHistory{tries: map[string]int{}}
	base := layout.AuditPrefix()
	runs, problems, err := audit.List(ctx, store, base, audit.Filter{Tool: "dla"})
	if err != nil {
		h.Problem = fmt.Sprintf("the audit records at %s could not be read (%s): the runs that tried these objects are not shown",
			audit.Where(store, base), output.OneLine(err.Error()))
		return h
	}
	for i := range runs {
		if err := runs[i].LoadItems(ctx, store); err != nil {
			h.Problem = fmt.Sprintf("the items of run %s could not be read (%s): the runs that tried these objects may be more than shown",
				runs[i].RunID, output.OneLine(err.Error()))
			continue
		}
		if runs[i].Verb != "recover" {
			continue
		}
		seen := map[string]bool{}
		for _, it := range runs[i].Items {
			for _, k := range []string{it.Key, it.MovedTo} {
				if k != "" && !seen[k] {
					seen[k] = true
					h.tries[k]++
				}
			}
		}
	}
	if len(problems) > 0 && h.Problem == "" {
		h.Problem = fmt.Sprintf("%s of %s could not be read: %s", output.Plural(len(problems), "audit record"), audit.Where(store, base), output.OneLine(problems[0]))
	}
	h.runs = runs
	return h
}

// Tries is how many recover runs tried key (0: none recorded).
func (h *auditHistory) Tries(key string) int {
	if h == nil {
		return 0
	}
	return h.tries[key]
}

// triedText is "tried N times by recover" ("" for none).
func triedText(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("tried %s by recover", output.Plural(n, "time"))
}

// Of is the record's history, newest first, one line a run: "recovered
// by WHO at T (REASON): written, deleted", for the runs whose items match.
func (h *auditHistory) Of(match func(audit.Item) bool) []string {
	if h == nil {
		return nil
	}
	var lines []string
	for i := range h.runs {
		r := h.runs[i] // a copy: its items are narrowed to the record's
		var mine []audit.Item
		for _, it := range r.Items {
			if match(it) {
				mine = append(mine, it)
			}
		}
		if len(mine) == 0 {
			continue
		}
		r.Items = mine
		line := historycmd.Summary(&r, pastOf(&r))
		if r.Finished == nil {
			line += " (did not finish)"
		}
		lines = append(lines, line)
	}
	return lines
}

// pastOf is a run's verb in the past tense, for a record's history.
func pastOf(r *audit.Run) string {
	switch {
	case r.Verb == "recover" && r.Target.API != "":
		return "recovered through the Cumulus API"
	case r.Verb == "recover":
		return "recovered"
	case r.Verb == "migrate-legacy":
		return "migrated"
	}
	return r.Verb
}

// triedGroup counts, for a triage group, its objects of failed-sqs/ that
// recover tried before, and how often.
type triedGroup struct {
	Objects int `json:"objects"`
	Max     int `json:"max_times"`
	min     int
}

func (g *triedGroup) add(n int) {
	if n == 0 {
		return
	}
	if g.Objects == 0 || n < g.min {
		g.min = n
	}
	g.Objects++
	g.Max = max(g.Max, n)
}

// text is the group's note: "tried 2 times by recover", "3 of them tried
// 2 times by recover", "3 of them tried by recover, up to 4 times".
func (g *triedGroup) text(count int) string {
	switch {
	case g == nil || g.Objects == 0:
		return ""
	case g.Objects == 1 && count == 1:
		return triedText(g.Max)
	case g.min == g.Max:
		return fmt.Sprintf("%d of them %s", g.Objects, triedText(g.Max))
	}
	return fmt.Sprintf("%d of them tried by recover, up to %s", g.Objects, output.Plural(g.Max, "time"))
}
