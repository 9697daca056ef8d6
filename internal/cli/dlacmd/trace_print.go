package dlacmd

// dla trace's renderers: the records for a terminal or a pipe, and the
// summary line.

import (
	"cmp"
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/lipgloss"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/cli/output"
	"github.com/deadletter/deadletter/internal/cumulusdb"
	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/recovery"
	"github.com/deadletter/deadletter/internal/selection"
)

// printTraceSummary is the trace's last line, on stderr: how many records
// and messages, from which archive and database.
func printTraceSummary(f *Factory, rep TraceReport, records int, stats selection.Stats, loc archive.Location) {
	db := fmt.Sprintf("%s (%s), read only", rep.Database, rep.Cumulus)
	if rep.DatabaseError != nil {
		db = rep.Database + " not checked (it could not be asked)"
	}
	summary := fmt.Sprintf("%s traced: %s naming %s, %s read from %s; %s",
		output.Plural(records, "record"), output.Plural(stats.Matched, "message"), output.Agree(records, "it", "them"), output.Plural(stats.Listed, "object"), loc, db)
	if f.IO.IsStderrTTY() {
		summary = output.Wrap(output.OneLine(summary), cmp.Or(f.IO.TerminalWidth(), 80), "", "  ")
	}
	fmt.Fprintln(f.IO.ErrOut, summary)
}

// writeTrace prints each record: its rows, its messages with their
// verdicts, the conclusion and the command on a line of its own. On a
// terminal every line but a command is folded to the width and coloured;
// piped, the same lines unfolded and plain. Archived text is escaped first.
func writeTrace(f *Factory, rep TraceReport) error {
	tty := f.IO.IsStdoutTTY()
	width := 1 << 30
	if tty {
		width = cmp.Or(f.IO.TerminalWidth(), 80)
	}
	r, color := f.IO.Renderer(), f.IO.ColorEnabled()
	style := func(s, fg string, bold bool) string {
		if !color {
			return s
		}
		st := r.NewStyle().Bold(bold)
		if fg != "" {
			st = st.Foreground(lipgloss.Color(fg))
		}
		return st.Render(s)
	}
	var b strings.Builder
	line := func(indent string, s string) {
		b.WriteString(output.Wrap(output.OneLine(s), width, indent, indent+"    ") + "\n")
	}
	for i, rec := range rep.Records {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(style(rec.Kind, "", true) + " " + output.OneLine(rec.ID) + "\n")
		switch {
		case rep.DatabaseError != nil:
			line("  ", "database: "+*rep.DatabaseError)
		case len(rec.Rows) == 0:
			line("  ", "database: not in the database")
		}
		for _, row := range rec.Rows {
			line("  ", "database: "+rowText(row))
		}
		if len(rec.Messages) == 0 {
			line("  ", "archive: no message names it in sqs/ or failed-sqs/")
		} else {
			line("  ", fmt.Sprintf("archive: %s, in recover's order", output.Plural(len(rec.Messages), "message")))
		}
		for _, m := range rec.Messages {
			head := m.Date
			if m.CreatedAt != nil {
				head += " (createdAt " + m.CreatedAt.UTC().Format(time.RFC3339) + ")"
			}
			head += "  " + cmp.Or(deref(m.Status), "no status") + "  " + m.Area
			if m.Triage != "" {
				head += "  " + m.Triage
			}
			b.WriteString("    " + style(output.Cut(output.OneLine(head), max(width-4, 20)), "", true) + "\n")
			line("      ", trimRoot(m.Key))
			if n := rec.TriedByRecover[m.Key]; n > 0 {
				line("      ", triedText(n))
			}
			if m.ErrorClass != nil {
				line("      ", "error: "+output.Cut(cmp.Or(*m.ErrorClass, dla.NoErrorText), max(width-13, 20)))
			}
			v := m.Verdict.Result
			if m.Verdict.Why != "" {
				v += ": " + output.OneLine(m.Verdict.Why)
			}
			fg := map[string]string{recovery.Written: "2", recovery.Dropped: "3", recovery.Failed: "1"}[m.Verdict.Result]
			text := output.Wrap(output.OneLine("writes "+m.Writes+" → "+v), width, "      ", "          ")
			if fg != "" {
				text = strings.Replace(text, "→ "+m.Verdict.Result, "→ "+style(m.Verdict.Result, fg, true), 1)
			}
			b.WriteString(text + "\n")
		}
		for _, w := range rec.Warnings {
			line("  ", "warning: "+w)
		}
		for _, h := range rec.History {
			line("  ", "history: "+h)
		}
		concl := rec.Conclusion.Text
		if rec.Command != nil {
			concl += ":"
		}
		b.WriteString(output.Wrap(output.OneLine(concl), width, "  "+style("→", "6", true)+" ", "    ") + "\n")
		if rec.Command != nil {
			b.WriteString("      " + *rec.Command + "\n")
			if rec.CommandNote != nil {
				line("    ", "("+*rec.CommandNote+")")
			}
		}
	}
	// Every archived text was escaped above (OneLine): stdout itself, so
	// that the styling is not escaped too.
	_, err := fmt.Fprint(f.IO.Out, b.String())
	return err
}

// rowText is a row in one line.
func rowText(r cumulusdb.TraceRow) string {
	at := func(t *time.Time) string {
		if t == nil {
			return "-"
		}
		return t.UTC().Format(time.RFC3339Nano)
	}
	s := fmt.Sprintf("%s %s, collection %s, created_at %s, updated_at %s, timestamp %s", r.Table, r.Status,
		cmp.Or(deref(r.Collection), "-"), at(r.CreatedAt), at(r.UpdatedAt), at(r.Timestamp))
	if r.Files != nil {
		s += ", " + output.Plural(*r.Files, "file")
	}
	if r.Granules != nil {
		s += ", " + output.Plural(*r.Granules, "granule")
	}
	if r.Execution != nil {
		s += ", execution " + *r.Execution
	}
	return s
}

// trimRoot is a key without <stack>/dead-letter-archive/ (as search's
// table shows it).
func trimRoot(key string) string {
	if _, rest, ok := strings.Cut(key, "/dead-letter-archive/"); ok {
		return rest
	}
	return key
}
