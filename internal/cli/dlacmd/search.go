package dlacmd

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/athenarun"
	"github.com/deadletter/deadletter/internal/cli/cmdutil"
	"github.com/deadletter/deadletter/internal/cli/output"
	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/selection"
)

// SearchOptions are dla search's inputs.
type SearchOptions struct {
	Factory *Factory
	Select  selectFlags
	Engine  engineFlags
	Output  *cmdutil.Output
	Null    bool // -o keys: NUL-terminated
	Verbose bool
}

// NewCmdSearch builds `dla search`.
func NewCmdSearch(f *Factory) *cobra.Command {
	opts := &SearchOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "search [flags]",
		Short: "Find archive objects by granule, collection, execution, status, error or date",
		Long: `Search the archive. Only the date folders in range are listed (--date, --from,
--to); objects are fetched concurrently and printed in a stable order (date,
then key). Filters of different kinds must all match; repeated values of one
filter are alternatives.

Output formats: table (aligned with a header on a terminal; tab-separated
without one when piped), wide (the table with every column and cell whole,
however wide), json (one array), ndjson (one object per line), and keys (one object key per line, to pipe into 'dla show -'; with -0, each key
ends with a NUL byte instead, for 'dla show -0 -', 'dla recover -0 -' or
xargs -0: then a key may hold any byte). A key that would not read back as
itself one per line (a line break or a space at either end in it) is not
printed without -0: it is named on stderr and the exit code is 3.

On a terminal the table keeps each key whole: to fit, it leaves out DATE
(the key holds it), then GRANULES, COLLECTION and STATUS, and shortens the
rest first. Where even a whole key does not fit (keys are 88 characters,
more than an 80-column terminal), it shows each key's unique tail, the
shortest end no other row's key shares. A line on stderr says what was left
out.

Objects that cannot be read or decoded are reported on stderr and make the
exit code 3 unless --ignore-unreadable; with it they are counted and the
first 5 listed (-v lists every one).

With --engine athena the search runs as one Athena query over the stack's
partition-projected Glue table (<prefix>_dla_glue_table in workgroup
<prefix>_athena_workgroup, <prefix> being the stack with - as _), so dla
reads only the objects it returns: each is fetched, decoded and checked
against the filters as above, and printed in the same formats. The date range
is always part of the query: without --date, --from or --to it covers the
last 7 days. The table covers sqs/ date folders only (not --failed, not
--include-legacy). A progress line shows the query's state and bytes scanned;
the summary gives the scan and its estimated cost; Ctrl-C stops the query
(exit 130); a query that fails exits 1 with Athena's reason. --print-sql prints
the query and runs nothing; --max-scan-bytes stops a query once its scan
passes the limit.`,
		Example: `  dla search --archive s3://bucket/stack --granule MOD09GQ.A2024018.h31v05.006.2024031032640
  dla search --date 2024-03-02 --status FAILED --collection MOD09GQ -o ndjson
  dla search --from 2024-03-01 --to 2024-03-07 --error 'UnmetRequirementsError' -o keys
  dla search --archive s3://bucket/stack --engine athena --from 2024-01-01 --granule G -o keys | dla recover --archive s3://bucket/stack -`,
		Args: cmdutil.UsageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.Output.Validate(); err != nil {
				return err
			}
			return runSearch(cmd.Context(), opts)
		},
	}
	opts.Select.register(cmd)
	opts.Engine.register(cmd)
	cmd.Flags().BoolVarP(&opts.Verbose, "verbose", "v", false, "with --ignore-unreadable, list every unreadable object, not only the first 5")
	opts.Output = cmdutil.AddOutputFlag(cmd, "table", "wide", "json", "ndjson", "keys")
	cmd.Flags().BoolVarP(&opts.Null, "null", "0", false, "with -o keys, end each key with a NUL byte instead of a newline")
	return cmd
}

func runSearch(ctx context.Context, opts *SearchOptions) error {
	f := opts.Factory
	if opts.Null && opts.Output.Value != "keys" {
		return cmdutil.UsageErrorf("-0/--null goes with -o keys")
	}
	useAthena, err := opts.Engine.athena()
	if err != nil {
		return err
	}
	progress := cmdutil.NewProgress(f.IO.ErrOut, f.IO.ShowProgress())
	var (
		scope        selection.Scope
		loc          archive.Location
		store        archive.Store
		plan         athenaPlan
		athenaStatus athenarun.Status
	)
	if useAthena {
		scope, loc, store, plan, err = opts.Engine.openSearch(ctx, f, &opts.Select, progress, &athenaStatus)
		if err != nil || store == nil { // store is nil after --print-sql
			return err
		}
	} else if scope, loc, store, err = opts.Select.open(ctx, f); err != nil {
		return err
	}
	var print func(*dla.Decoded) error
	unsafeKeys := 0
	var closeOut func() error
	fitNote := ""
	switch opts.Output.Value {
	case "json", "ndjson":
		js := output.NewJSONStream(output.JSONOut(f.IO), opts.Output.Value == "ndjson")
		print = func(d *dla.Decoded) error { return js.Write(d.View()) }
		closeOut = js.Close
	case "keys":
		// On a terminal a key is escaped like any archive text; piped it is
		// written as it is, for xargs and 'dla recover -'.
		esc := output.EscapeFor(f.IO.IsStdoutTTY())
		print = func(d *dla.Decoded) error {
			if opts.Null {
				_, err := fmt.Fprint(f.IO.Out, esc(d.Key)+"\x00")
				return err
			}
			if !lineSafeKey(d.Key) {
				unsafeKeys++
				progress.Clear()
				fmt.Fprintf(f.IO.ErrOut, "dla: not printed: key %q would not read back as itself one per line; use -o keys -0\n", d.Key)
				return nil
			}
			_, err := fmt.Fprintln(f.IO.Out, esc(d.Key))
			return err
		}
		closeOut = func() error { return nil }
	default:
		t := output.NewTable(f.IO, "KEY", "DATE", "STATUS", "COLLECTION", "GRANULES", "ERROR")
		// On a terminal the key stays whole (or, narrower than it, its
		// unique tail): the date (in the key), the granules, the
		// collection and the status are left out in turn first.
		t.KeepKey(0, 1, 4, 3, 2)
		wide := opts.Output.Value == "wide"
		t.SetWide(wide)
		cut := f.IO.IsStdoutTTY() && !wide
		root := scope.Layout.Root()
		print = func(d *dla.Decoded) error {
			// Every key starts with <stack>/dead-letter-archive/; the rest
			// is what 'dla show' needs (-o keys and JSON keep full keys).
			return t.Row(strings.TrimPrefix(d.Key, root), d.Date(), orDash(d.Status), orDash(d.CollectionID), granuleCell(d.Granules, cut), errorCell(d.ErrorHeadline(), cut))
		}
		closeOut = func() error {
			progress.Clear()
			err := t.Flush()
			fitNote = fittingNote(t.Fitted(), f.IO.TerminalWidth())
			return err
		}
	}
	matched := 0
	ul := newUnreadableLog(f, progress, opts.Select.ignoreUnreadable, opts.Verbose)
	st, runErr := scan(ctx, store, scope, opts.Select.concurrency, ul, func(d *dla.Decoded) error {
		matched++
		progress.Update("%s", output.Plural(matched, "match"))
		return print(d)
	})
	if err := closeOut(); err != nil && runErr == nil {
		runErr = err
	}
	progress.Clear()
	if runErr != nil {
		// No summary: "0 matching" above a fatal error reads as a result.
		return runErr
	}
	ul.done()
	if useAthena {
		fmt.Fprintln(f.IO.ErrOut, athenaSummary(plan, athenaStatus))
	}
	summary := fmt.Sprintf("%s, %s read (%s) from %s", output.Plural(st.Matched, "match"), output.Plural(st.Listed, "object"), output.HumanBytes(st.Bytes), loc)
	if st.Unreadable > 0 {
		summary += fmt.Sprintf(", %d unreadable", st.Unreadable)
	}
	if st.Truncated {
		summary += fmt.Sprintf("; stopped at --limit %d", scope.Limit)
	}
	if unsafeKeys > 0 {
		summary += fmt.Sprintf(", %s not printed (use -0)", output.Plural(unsafeKeys, "key"))
	}
	fmt.Fprintln(f.IO.ErrOut, summary)
	if fitNote != "" {
		fmt.Fprintln(f.IO.ErrOut, fitNote)
	}
	if err := finish(nil, st, opts.Select.ignoreUnreadable); err != nil || unsafeKeys == 0 {
		return err
	}
	return cmdutil.PartialError
}

// fittingNote says what fitting the table to a terminal of cols columns
// left out, and how to see it all; "" when it left out nothing.
func fittingNote(fit output.Fitting, cols int) string {
	var parts []string
	if fit.Tails {
		parts = append(parts, "keys shown by their unique tail")
	}
	if len(fit.Dropped) > 0 {
		parts = append(parts, strings.Join(fit.Dropped, ", ")+" left out")
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("fitted to %d columns: %s\n-o wide shows every column whole; -o keys prints the whole keys", cols, strings.Join(parts, ", "))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// granuleCell shows the first granule and how many more there are.
func granuleCell(gs []string, tty bool) string {
	switch {
	case len(gs) == 0:
		return "-"
	case !tty:
		return strings.Join(gs, ",")
	case len(gs) == 1:
		return orDash(gs[0])
	}
	return fmt.Sprintf("%s (+%d)", orDash(gs[0]), len(gs)-1)
}

func errorCell(headline string, tty bool) string {
	if headline == "" {
		return "-"
	}
	if r := []rune(headline); tty && len(r) > 72 {
		return string(r[:71]) + "…"
	}
	return headline
}
