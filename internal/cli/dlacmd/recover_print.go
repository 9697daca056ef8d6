package dlacmd

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/deadletter/deadletter/internal/cli/output"
	"github.com/deadletter/deadletter/internal/cumulusdb"
	"github.com/deadletter/deadletter/internal/recovery"
	"github.com/deadletter/deadletter/internal/shellword"
	"github.com/deadletter/deadletter/internal/snspub"
	"github.com/deadletter/deadletter/internal/workflow/dlarecover"
)

// The renderers of dla recover: the plan and its question, each object's
// line, the summary, and what an interrupt left.

// recoverAuditLine is the plan's line naming the audit record: none in a
// dry run, which changes nothing.
func recoverAuditLine(opts *RecoverOptions) {
	if opts.DryRun {
		if opts.audit != nil {
			fmt.Fprintln(opts.Factory.IO.ErrOut, "audit: none (dry run: nothing is changed)")
		}
		return
	}
	opts.audit.planLine(opts.Factory.IO.ErrOut)
}

// interruptedBeforeAnyChange is err, said first to be an interrupt that
// came before anything was written or moved, when it is one (Ctrl-C or
// SIGTERM during the database's checks, the plan or the question).
func interruptedBeforeAnyChange(ctx context.Context, opts *RecoverOptions, err error) error {
	if err != nil && ctx.Err() != nil {
		fmt.Fprintln(opts.Factory.IO.ErrOut, "interrupted before anything was written or moved: nothing changed")
	}
	return err
}

// printRecoverInterrupted says what an interrupted run left: nothing
// changed, when no object was processed; else how many were, and the
// command that goes on (the same selection: what was written or moved is
// no longer in it), quoted for the shell, with a database URL's password
// left out (it is read from PGPASSWORD or ~/.pgpass).
func printRecoverInterrupted(opts *RecoverOptions, sum *RecoverSummary) {
	errOut := opts.Factory.IO.ErrOut
	if sum == nil || sum.Processed == 0 {
		fmt.Fprintln(errOut, "interrupted before anything was written or moved: nothing changed")
		return
	}
	words := []string{"dla", "recover"}
	note := ""
	for i := 0; i < len(opts.given); i++ {
		w := opts.given[i]
		if w == "--database-url" && i+1 < len(opts.given) {
			u, hadPassword, ok := urlWithoutPassword(opts.given[i+1])
			i++
			switch {
			case !ok:
				note = "; add --database-url as given: it is left out, as its key=value form may hold a password"
				continue
			case hadPassword:
				note = "; the password of --database-url is left out: the command reads it from PGPASSWORD or ~/.pgpass"
			}
			words = append(words, w, u)
			continue
		}
		words = append(words, w)
	}
	words = append(words, opts.Args...)
	fmt.Fprintf(errOut, "interrupted: %s processed (the summary above); the rest are still in the archive, and the same command goes on with them%s:\n  %s\n",
		output.Plural(sum.Processed, "object"), note, shellword.Join(words...))
}

// recoverQuestion is the confirmation of a recovery: what is written where,
// and what then becomes of the archive's objects (deleted, moved to
// failed-sqs/, or kept), so that "yes" is said to all of it.
func recoverQuestion(p *dlarecover.Plan, opts *RecoverOptions) string {
	q := fmt.Sprintf("Write %s to %s?", output.Plural(p.Objects, "object"), p.Database)
	if opts.Keep {
		return q + "\nEvery archive object is kept where it is (--keep)."
	}
	q += "\nThen each object written (or dropped as stale) is deleted from the archive,\nand each that fails is moved to failed-sqs/<event date>/"
	switch {
	case p.Unreadable > 0 && opts.LeaveUnreadable:
		q += fmt.Sprintf(";\nthe %s %s left where %s (--leave-unreadable)", output.Plural(p.Unreadable, "unreadable object"),
			map[bool]string{true: "is", false: "are"}[p.Unreadable == 1], map[bool]string{true: "it is", false: "they are"}[p.Unreadable == 1])
	case p.Unreadable > 0:
		q += fmt.Sprintf(",\nas %s %s", map[bool]string{true: "is", false: "are"}[p.Unreadable == 1], output.Plural(p.Unreadable, "unreadable object"))
	}
	return q + "."
}

func printPlan(w io.Writer, p *dlarecover.Plan, opts *RecoverOptions, topics snspub.Topics) {
	mode := "recover"
	switch {
	case opts.DryRun:
		mode = "dry run (nothing is changed)"
	case opts.Keep:
		mode = "recover, keeping every archive object (--keep)"
	}
	fmt.Fprintf(w, "plan: %s\n  archive   %s (%s)\n  database  %s\n  schema    %s (%s)\n  objects   %d", mode, p.Archive, p.Area, p.Database,
		p.Schema, cumulusdb.Generation(p.Schema).Releases(), p.Objects)
	if p.Unreadable > 0 {
		fmt.Fprintf(w, " (%d unreadable)", p.Unreadable)
	}
	fmt.Fprintln(w)
	if p.LeftAlone > 0 {
		fmt.Fprintf(w, "  left alone: %s of the dates listed (a content filter cannot tell\n"+
			"    whether they match; --include-unreadable moves them to failed-sqs, dla search names them)\n", output.Plural(p.LeftAlone, "unreadable object"))
	}
	for _, g := range []struct {
		name string
		m    map[string]int
	}{{"date", p.ByDate}, {"status", p.ByStatus}, {"collection", p.ByColl}} {
		if len(g.m) == 0 {
			continue
		}
		keys := make([]string, 0, len(g.m))
		for k := range g.m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, 0, len(keys))
		for i, k := range keys {
			if i == 12 {
				parts = append(parts, fmt.Sprintf("... %d more", len(keys)-12))
				break
			}
			// Statuses and collections come from the archive: escaped,
			// as this is for people (stderr), terminal or not.
			parts = append(parts, fmt.Sprintf("%s %d", output.Escape(k), g.m[k]))
		}
		fmt.Fprintln(w, foldParts(fmt.Sprintf("  by %-9s ", g.name), parts, peopleWidth(opts)))
	}
	if opts.Offline {
		fmt.Fprintln(w, "  AWS reads off (--offline): no processing times, failed-step output,\n    CMR dates or file sizes")
	} else {
		fmt.Fprintf(w, "  Step Functions: about %s, %s\n", output.Plural(p.Describe, "DescribeExecution call"), output.Plural(p.History, "execution history"))
	}
	switch {
	case topics.None():
		fmt.Fprintln(w, "  SNS: no topics given, nothing is published")
	case opts.DryRun:
		fmt.Fprintln(w, "  SNS: nothing is published (dry run); the summary counts what would be")
	default:
		fmt.Fprintf(w, "  SNS: each write's notifications, as Cumulus v21 publishes them, to\n    execution %s\n    granule   %s\n    pdr       %s\n",
			output.Escape(topics.Execution), output.Escape(topics.Granule), output.Escape(topics.Pdr))
	}
}

// printObjectText prints an object's result; on a terminal of width
// columns (0: piped) where an object moved to goes on a line of its own and
// the error is folded to fit, so that only a key is ever wider than it.
func printObjectText(w io.Writer, o ObjectResult, width int) error {
	line := fmt.Sprintf("%-10s %-12s %s", o.Result, o.Action, textKey(o.Key))
	if o.MovedTo != "" && width > 0 {
		line += "\n    -> " + textKey(o.MovedTo)
	} else if o.MovedTo != "" {
		line += " -> " + textKey(o.MovedTo)
	}
	if o.Error != "" {
		line += "\n" + output.Fold(output.Fields(strings.ReplaceAll(firstLine(o.Error), "\n", " "), width-4), width, "    ", "    ")
	}
	for _, g := range o.Granules {
		if g.Outcome != recovery.Written {
			line += fmt.Sprintf("\n    granule %s %s", g.GranuleID, g.Outcome)
		}
	}
	for _, wn := range o.Warnings {
		line += "\n    warning: " + wn
	}
	_, err := fmt.Fprintln(w, line)
	return err
}

// textKey is a key as one line of text: quoted when it holds a line break
// or anything else that would not read back as itself.
func textKey(k string) string {
	if lineSafeKey(k) {
		return k
	}
	return strconv.Quote(k)
}

// peopleWidth is the width the plan and the summary, on stderr for people,
// are folded to: stderr's terminal's (40 at the least); piped, they are not
// folded, each line as it always was for a script that reads it.
func peopleWidth(opts *RecoverOptions) int {
	if w := opts.Factory.IO.ErrTerminalWidth(); w > 0 {
		return max(w, 40)
	}
	return math.MaxInt32
}

// foldParts is lead followed by parts joined with ", ", folded (output.Fold)
// after a comma into lines of at most width columns, the next lines
// indented four columns deeper than lead (a part wider than a line stays
// whole).
func foldParts(lead string, parts []string, width int) string {
	indent := strings.Repeat(" ", len(lead)-len(strings.TrimLeft(lead, " "))+4)
	words := slices.Clone(parts)
	for i := range len(words) - 1 {
		words[i] += ","
	}
	return output.Fold(words, width, lead, indent)
}

func firstLine(s string) string {
	if len(s) > 400 {
		s = s[:400] + "..."
	}
	return s
}

func snsLine(s dlarecover.SNSSummary) string {
	counts := fmt.Sprintf("%d execution, %d granule, %d PDR notifications", s.Execution, s.Granule, s.Pdr)
	switch {
	case !s.Topics:
		return "none published (no topic ARNs given)"
	case !s.Published:
		return "nothing published (dry run); would have published " + counts
	}
	line := "published " + counts
	if d := s.PossibleDuplicates; d != (recovery.PublishCounts{}) {
		line += fmt.Sprintf("; %d more may have been delivered (their reply was lost: %d execution, %d granule, %d PDR)",
			d.Execution+d.Granule+d.Pdr, d.Execution, d.Granule, d.Pdr)
	}
	return line
}

func writeSummary(opts *RecoverOptions, s *RecoverSummary) error {
	f := opts.Factory
	if opts.Output.Value == "ndjson" || opts.Output.Value == "json" {
		js := output.NewJSONStream(output.JSONOut(f.IO), true)
		if err := js.Write(s); err != nil {
			return err
		}
		if err := js.Close(); err != nil {
			return err
		}
	}
	verb := "recovered"
	if s.DryRun {
		verb = "dry run"
	}
	gone := ""
	if s.GoneElsewhere > 0 {
		// Not this run's failures: another run moved or deleted them first.
		gone = fmt.Sprintf(", %d gone elsewhere (already moved or deleted by another run)", s.GoneElsewhere)
	}
	fmt.Fprintln(f.IO.ErrOut, foldParts(fmt.Sprintf("%s: %d of %s: ", verb, s.Processed, output.Plural(s.Selected, "object")), []string{
		fmt.Sprintf("%d written", s.Written), fmt.Sprintf("%d dropped", s.Dropped), fmt.Sprintf("%d failed", s.Failed),
		fmt.Sprintf("%d unreadable", s.Unreadable), fmt.Sprintf("%d left in place%s", s.Left, gone), fmt.Sprintf("%d not processed", s.NotProcessed),
	}, peopleWidth(opts)))
	fmt.Fprintf(f.IO.ErrOut, "  archive: %d deleted, %d moved to failed-sqs\n", s.Deleted, s.Moved)
	fmt.Fprintln(f.IO.ErrOut, foldParts(fmt.Sprintf("  database (Cumulus %s): ", s.Schema), []string{
		output.Plural(s.Executions, "execution"), fmt.Sprintf("%s (%d dropped)", output.Plural(s.Pdrs, "PDR"), s.PdrsDropped),
		fmt.Sprintf("granules %d written", s.GranulesWritten), fmt.Sprintf("%d dropped", s.GranulesDropped), fmt.Sprintf("%d failed", s.GranulesFailed),
		fmt.Sprintf("%d marked failed for their files", s.FilesFailed),
	}, peopleWidth(opts)))
	if s.NoProcTimes > 0 {
		fmt.Fprintf(f.IO.ErrOut, "  %s written without processing times (DescribeExecution failed; v21 would have failed them)\n", output.Plural(s.NoProcTimes, "object"))
	}
	fmt.Fprintf(f.IO.ErrOut, "  SNS: %s\n", snsLine(s.SNS))
	if s.StoppedBy != "" {
		fmt.Fprintf(f.IO.ErrOut, "  stopped: %s\n", output.Escape(s.StoppedBy))
	}
	return nil
}
