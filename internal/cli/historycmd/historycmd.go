// Package historycmd is the `history` verb both dla and pushdlq have: the
// runs their audit records hold, newest first, as a table fitted to the
// terminal, tab-separated when piped, or deadletter.history/v1 lines.
// Each tool hands in where its records are and what a record filter
// (--key, --granule, --notification) matches.
package historycmd

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/audit"
	"github.com/deadletter/deadletter/internal/calendar"
	"github.com/deadletter/deadletter/internal/cli/cmdutil"
	"github.com/deadletter/deadletter/internal/cli/iostreams"
	"github.com/deadletter/deadletter/internal/cli/output"
)

// Options are history's flags.
type Options struct {
	From, To, Since string
	Verbs           []string
	Actor           string
	Limit           int
	Output          *cmdutil.Output
}

// AddFlags adds history's common flags to cmd (the tool adds its record
// filters).
func AddFlags(cmd *cobra.Command, o *Options) {
	fl := cmd.Flags()
	fl.StringVar(&o.From, "from", "", "runs started on or after this day (YYYY-MM-DD, today, yesterday) or time (RFC 3339)")
	fl.StringVar(&o.To, "to", "", "runs started on or before this day (YYYY-MM-DD, today, yesterday) or before this time (RFC 3339)")
	fl.StringVar(&o.Since, "since", "", "runs started within this span before now (30m, 12h, 7d)")
	fl.StringSliceVar(&o.Verbs, "verb", nil, "only runs of this verb (repeatable): recover, replay, export, processor arm ...")
	fl.StringVar(&o.Actor, "actor", "", "only runs whose AWS ARN, OS user or host contains this text")
	fl.IntVar(&o.Limit, "limit", 0, "at most this many runs (0: all)")
	o.Output = cmdutil.AddOutputFlag(cmd, "text", "ndjson")
}

// Source is where a tool's records are and what its record filter is.
type Source struct {
	Store archive.Store
	Base  string // the records' prefix
	Where string // for people: the records' location
	Tool  string
	// Match, when set, is the record filter: only runs with an item it
	// matches are listed, and those items go with them.
	Match func(audit.Item) bool
	// RecordName names the filter for people ("key X").
	RecordName string
	// Own says Base holds nothing but records (dla's audit folder): a
	// folder there not named like a day is named as a problem.
	Own bool
}

// Filter turns the flags into an audit filter.
func (o *Options) Filter(now time.Time) (audit.Filter, error) {
	var f audit.Filter
	if o.Since != "" {
		if o.From != "" {
			return f, cmdutil.UsageErrorf("--since and --from cannot be combined")
		}
		d, err := cmdutil.ParseSince(o.Since)
		if err != nil {
			return f, cmdutil.UsageErrorf("--since: %v", err)
		}
		f.From = now.Add(-d)
	}
	var err error
	if o.From != "" {
		if f.From, err = parseWhen(o.From, now, false); err != nil {
			return f, cmdutil.UsageErrorf("--from: %v", err)
		}
	}
	if o.To != "" {
		if f.To, err = parseWhen(o.To, now, true); err != nil {
			return f, cmdutil.UsageErrorf("--to: %v", err)
		}
	}
	if !f.From.IsZero() && !f.To.IsZero() && !f.From.Before(f.To) {
		return f, cmdutil.UsageErrorf("--from %s is not before --to %s", o.From, o.To)
	}
	if o.Limit < 0 {
		return f, cmdutil.UsageErrorf("--limit must not be negative")
	}
	for _, v := range o.Verbs {
		f.Verbs = append(f.Verbs, strings.TrimSpace(v))
	}
	f.Actor = o.Actor
	return f, nil
}

// parseWhen reads a day (its start; with end, the next day's start, so
// that --to names the last day included) or a time.
func parseWhen(v string, now time.Time, end bool) (time.Time, error) {
	day := time.Date(now.UTC().Year(), now.UTC().Month(), now.UTC().Day(), 0, 0, 0, 0, time.UTC)
	var t time.Time
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "today":
		t = day
	case "yesterday":
		t = day.AddDate(0, 0, -1)
	default:
		if err := calendar.NotADay(v); err != nil {
			return t, err
		}
		if d, err := time.Parse("2006-01-02", v); err == nil {
			t = d
		} else if ts, err := time.Parse(time.RFC3339, v); err == nil {
			return ts.UTC(), nil
		} else {
			return t, fmt.Errorf("%q is neither a day (YYYY-MM-DD, today, yesterday) nor a time (RFC 3339)", v)
		}
	}
	if end {
		t = t.AddDate(0, 0, 1)
	}
	return t, nil
}

// Run lists the runs.
func Run(ctx context.Context, ios *iostreams.IOStreams, o *Options, now time.Time, src Source) error {
	if err := o.Output.Validate(); err != nil {
		return err
	}
	f, err := o.Filter(now)
	if err != nil {
		return err
	}
	f.Tool, f.NameForeign = src.Tool, src.Own
	runs, problems, err := audit.List(ctx, src.Store, src.Base, f)
	if err != nil {
		return fmt.Errorf("read the audit records at %s: %w", src.Where, err)
	}
	for _, p := range problems {
		fmt.Fprintf(ios.ErrOut, "history: %s\n", output.OneLine(p))
	}
	if src.Match != nil {
		kept := runs[:0]
		for _, r := range runs {
			if err := r.LoadItems(ctx, src.Store); err != nil {
				return fmt.Errorf("read the items of run %s: %w", r.RunID, err)
			}
			var mine []audit.Item
			for _, it := range r.Items {
				if src.Match(it) {
					mine = append(mine, it)
				}
			}
			if len(mine) > 0 {
				r.Items = mine
				kept = append(kept, r)
				if len(kept) == o.Limit {
					break // newest first: the rest are not shown
				}
			}
		}
		runs = kept
	} else {
		if o.Limit > 0 && len(runs) > o.Limit {
			runs = runs[:o.Limit] // before their items are read
		}
		// A run that did not finish has no counts but its items'.
		for i := range runs {
			if runs[i].Finished == nil {
				if err := runs[i].LoadItems(ctx, src.Store); err != nil {
					return fmt.Errorf("read the items of run %s: %w", runs[i].RunID, err)
				}
			}
		}
	}
	if o.Limit > 0 && len(runs) > o.Limit {
		runs = runs[:o.Limit]
	}
	// What of a listed run could not be read (a chunk cut short, a
	// finished record that is not one) is said, not only in -o ndjson.
	for i := range runs {
		if runs[i].Problem != "" {
			fmt.Fprintf(ios.ErrOut, "history: %s: %s\n", output.OneLine(runs[i].Folder), output.OneLine(runs[i].Problem))
		}
	}
	var dropped []string
	if o.Output.Value == "ndjson" {
		js := output.NewJSONStream(output.JSONOut(ios), true)
		for i := range runs {
			if err := js.Write(runs[i].Line(audit.Where(src.Store, runs[i].Folder), src.Match != nil)); err != nil {
				return err
			}
		}
		if err := js.Close(); err != nil {
			return err
		}
	} else {
		if dropped, err = table(ios, runs, src.Match != nil); err != nil {
			return err
		}
	}
	if len(runs) == 0 {
		what := "no runs recorded"
		if !f.From.IsZero() || !f.To.IsZero() || len(f.Verbs) > 0 || f.Actor != "" {
			what = "no recorded run matches the filters"
		}
		if src.RecordName != "" {
			what = "no recorded run touched " + src.RecordName
		}
		fmt.Fprintf(ios.ErrOut, "%s at %s\n", what, output.Escape(src.Where))
	} else if ios.IsStderrTTY() {
		fmt.Fprintf(ios.ErrOut, "%s, newest first, from %s\n", output.Plural(len(runs), "run"), output.Escape(src.Where))
		if len(dropped) > 0 {
			fmt.Fprintf(ios.ErrOut, "%s left out at this width: -o ndjson has every field\n", strings.Join(dropped, ", "))
		}
	}
	return nil
}

// table prints the runs as a terminal table (tab-separated when piped); it
// returns the headers of the columns it left out to fit the terminal.
func table(ios *iostreams.IOStreams, runs []audit.Run, items bool) ([]string, error) {
	t := output.NewTable(ios, "WHEN (UTC)", "WHO", "WHY", "WHAT", "OUTCOME")
	// The time is never cut; on a narrow terminal WHAT gives way, and the
	// outcome ("did not finish") folds onto more lines rather than being
	// cut, so that it is read whole.
	t.KeepKey(0, 3)
	t.WrapLast()
	for i := range runs {
		r := &runs[i]
		why := r.Reason
		if why == "" {
			why = "-"
		}
		outcome := Outcome(r)
		if items {
			outcome = ItemsLine(r.Items) + "; " + outcome
		}
		cells := []string{r.StartedAt.UTC().Format("2006-01-02 15:04"), r.Actor.Who(), why, What(r), outcome}
		if !ios.IsStdoutTTY() {
			for i, c := range cells {
				cells[i] = pipedBreaks.Replace(c)
			}
		}
		if err := t.Row(cells...); err != nil {
			return nil, err
		}
	}
	err := t.Flush()
	return t.Fitted().Dropped, err
}

// pipedBreaks are the line breaks other than \n (which the table makes
// a space) that a reader of piped rows may split a line at (a carriage
// return in a --reason, a key): each is a space, so that a run stays one
// row.
var pipedBreaks = strings.NewReplacer("\r", " ", "\v", " ", "\f", " ", "\u0085", " ", "\u2028", " ", "\u2029", " ")

// What is the run's verb and target, short.
func What(r *audit.Run) string {
	parts := []string{r.Verb}
	if sel := selectionText(r.Selection); sel != "" {
		parts = append(parts, sel)
	}
	tg := r.Target
	switch {
	case tg.DLQ != "":
		parts = append(parts, lastPart(tg.DLQ))
	case tg.Function != "":
		parts = append(parts, tg.Function)
	}
	if tg.Database != nil {
		parts = append(parts, "→ "+tg.Database.Name+"@"+tg.Database.Host)
	} else if tg.API != "" {
		parts = append(parts, "→ "+audit.RedactText(tg.API))
	}
	return strings.Join(parts, " ")
}

func lastPart(s string) string {
	if i := strings.LastIndexAny(s, "/:"); i >= 0 && i < len(s)-1 {
		return s[i+1:]
	}
	return s
}

func selectionText(sel map[string]any) string {
	keys := make([]string, 0, len(sel))
	for k := range sel {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		switch v := sel[k].(type) {
		case string:
			if v != "" {
				parts = append(parts, k+"="+v)
			}
		case []any:
			if len(v) > 0 {
				parts = append(parts, fmt.Sprintf("%s=%v", k, v))
			}
		case []string:
			if len(v) > 0 {
				parts = append(parts, k+"="+strings.Join(v, ","))
			}
		case bool:
			if v {
				parts = append(parts, k)
			}
		case nil:
		default:
			parts = append(parts, fmt.Sprintf("%s=%v", k, v))
		}
	}
	return strings.Join(parts, " ")
}

// countOrder is the order the outcome names a run's counts in: what
// became of the records first (written, replayed ...), then what was done
// to the archive or the queue; a count not listed comes after, largest
// first. The totals (selected, processed) are left out: the others add up
// to them.
var countOrder = []string{"written", "dropped", "failed", "unreadable", "left", "gone_elsewhere", "not_processed",
	"replayed", "held_back", "parked", "released", "exported", "kept", "deleted", "moved"}

var countTotals = map[string]bool{"selected": true, "processed": true, "objects": true, "messages": true}

// Counts is a run's counts in words, in countOrder, zeros left out.
func Counts(c map[string]int) string {
	rank := func(k string) int {
		for i, o := range countOrder {
			if o == k {
				return i
			}
		}
		return len(countOrder)
	}
	keys := make([]string, 0, len(c))
	for k, n := range c {
		if n > 0 && !countTotals[k] {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if ri, rj := rank(keys[i]), rank(keys[j]); ri != rj {
			return ri < rj
		}
		if c[keys[i]] != c[keys[j]] {
			return c[keys[i]] > c[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%d %s", c[k], strings.ReplaceAll(k, "_", " "))
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, ", ")
}

// Outcome is a run's counts and end: "did not finish" for a run with no
// finished record, with what its items say.
func Outcome(r *audit.Run) string {
	if r.Finished == nil {
		return fmt.Sprintf("did not finish: %s recorded (%s)", output.Plural(len(r.Items), "item"), Counts(r.Counts()))
	}
	counts := Counts(r.Counts())
	if n := r.Finished.Unrecorded; n > 0 {
		// Their chunks could not be written: --key cannot find them.
		counts += fmt.Sprintf(" (%s not in the record)", output.Plural(n, "item"))
	}
	switch {
	case r.Finished.Interrupted:
		return counts + fmt.Sprintf(" (interrupted, exit %d)", r.Finished.ExitCode)
	case r.Finished.ExitCode != 0:
		return counts + fmt.Sprintf(" (exit %d)", r.Finished.ExitCode)
	}
	return counts
}

// ItemsLine is what a run did to the record a filter named.
func ItemsLine(items []audit.Item) string {
	var parts []string
	for _, it := range items {
		p := it.Action
		if it.Result != "" && it.Result != it.Action {
			p = it.Result + ", " + it.Action
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, "; ")
}

// Summary is one line of a record's history for trace: "recovered by WHO
// at T for REASON: written", newest first.
func Summary(r *audit.Run, verbPast string) string {
	why := "no reason given"
	if r.Reason != "" {
		why = r.Reason
	}
	return fmt.Sprintf("%s by %s at %s (%s): %s", verbPast, r.Actor.Who(), r.StartedAt.UTC().Format(time.RFC3339), why, ItemsLine(r.Items))
}
