package dlacmd

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/spf13/cobra"

	"github.com/deadletter/deadletter/internal/cli/cmdutil"
	"github.com/deadletter/deadletter/internal/cli/output"
	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/report"
)

// StatsOptions are dla stats's inputs.
type StatsOptions struct {
	Factory *Factory
	Select  selectFlags
	Engine  engineFlags
	By      string
	Output  *cmdutil.Output
	Verbose bool
}

var statsDimensions = []string{"date", "status", "collection", "error", "generation"}

// NewCmdStats builds `dla stats`.
func NewCmdStats(f *Factory) *cobra.Command {
	opts := &StatsOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "stats [flags]",
		Short: "Count archive objects grouped by date, status, collection, error or generation",
		Long: `Count the objects that match the same filters as 'dla search', grouped by one
dimension. Errors are grouped by class: the first line (for an AggregateError,
with its first inner error), with ids, ARNs, collection ids and numbers
replaced by placeholders, so that the same failure on many granules is one row.
Groups by date and generation are sorted by value; the others by count.

With --engine athena (see 'dla search --help') the counting is one GROUP BY
query over the Glue table and no object is fetched; it counts by date,
status, collection or error (error texts are grouped in the query and folded
into classes here), from the columns Cumulus hoisted into each record.`,
		Example: `  dla stats --archive s3://bucket/stack --by error --from 2024-03-01
  dla stats --by status --collection MOD09GQ -o json`,
		Args: cmdutil.UsageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.Output.Validate(); err != nil {
				return err
			}
			if !slices.Contains(statsDimensions, opts.By) {
				return cmdutil.UsageErrorf("invalid --by %q: want date, status, collection, error or generation", opts.By)
			}
			return runStats(cmd.Context(), opts)
		},
	}
	opts.Select.register(cmd)
	opts.Engine.register(cmd)
	cmd.Flags().StringVar(&opts.By, "by", "date", "group by: date, status, collection, error or generation")
	_ = cmd.RegisterFlagCompletionFunc("by", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return statsDimensions, cobra.ShellCompDirectiveNoFileComp
	})
	cmd.Flags().BoolVarP(&opts.Verbose, "verbose", "v", false, "with --ignore-unreadable, list every unreadable object, not only the first 5")
	opts.Output = cmdutil.AddOutputFlag(cmd, "table", "json")
	return cmd
}

// StatsGroup is one row of the stats output.
type StatsGroup struct {
	Value *string `json:"value"`
	Count int     `json:"count"`
}

// StatsReport is the -o json form of dla stats.
type StatsReport struct {
	By         string       `json:"by"`
	Total      int          `json:"total"`
	Unreadable int          `json:"unreadable"`
	Scanned    int          `json:"scanned"`
	Groups     []StatsGroup `json:"groups"`
}

func groupValue(by string, d *dla.Decoded) string {
	switch by {
	case "date":
		return d.Date()
	case "status":
		return d.Status
	case "collection":
		return d.CollectionID
	case "error":
		return dla.ErrorClass(d.Error)
	}
	return string(d.Generation)
}

func runStats(ctx context.Context, opts *StatsOptions) error {
	f := opts.Factory
	if useAthena, err := opts.Engine.athena(); err != nil || useAthena {
		if err != nil {
			return err
		}
		return runStatsAthena(ctx, opts)
	}
	scope, loc, store, err := opts.Select.open(ctx, f)
	if err != nil {
		return err
	}
	progress := cmdutil.NewProgress(f.IO.ErrOut, f.IO.ShowProgress())
	counts := map[string]int{}
	counted := 0
	ul := newUnreadableLog(f, progress, opts.Select.ignoreUnreadable, opts.Verbose)
	st, runErr := scan(ctx, store, scope, opts.Select.concurrency, ul, func(d *dla.Decoded) error {
		counts[groupValue(opts.By, d)]++
		counted++
		progress.Update("%s counted", output.Plural(counted, "object"))
		return nil
	})
	progress.Clear()
	if runErr != nil {
		return runErr
	}
	ul.done()
	report := StatsReport{By: opts.By, Total: st.Matched, Unreadable: st.Unreadable, Scanned: st.Listed}
	summary := func(groups string) string {
		line := fmt.Sprintf("%s in %s, %d read from %s", output.Plural(report.Total, "object"), groups, st.Listed, loc)
		if st.Unreadable > 0 {
			line += fmt.Sprintf(", %d unreadable", st.Unreadable)
		}
		return line
	}
	if err := printStats(f, opts, report, counts, summary); err != nil {
		return err
	}
	return finish(nil, st, opts.Select.ignoreUnreadable)
}

// noValue is the label of the objects that have no value to group by: an
// empty error is named as every verb names it (dla.NoErrorText).
func noValue(by string) string {
	if by == "error" {
		return dla.NoErrorText
	}
	return "(none)"
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// printStats sorts the groups and prints the report; after a table, the
// summary line (given "N groups") goes to stderr.
func printStats(f *Factory, opts *StatsOptions, report StatsReport, counts map[string]int, summary func(groups string) string) error {
	for v, n := range counts {
		g := StatsGroup{Count: n}
		if v != "" {
			g.Value = &v
		}
		report.Groups = append(report.Groups, g)
	}
	byValue := opts.By == "date" || opts.By == "generation"
	slices.SortFunc(report.Groups, func(a, b StatsGroup) int {
		av, bv := deref(a.Value), deref(b.Value)
		if byValue {
			return cmp.Compare(av, bv)
		}
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(av, bv))
	})
	if opts.Output.Value == "json" {
		if report.Groups == nil {
			report.Groups = []StatsGroup{}
		}
		return output.WriteJSON(output.JSONOut(f.IO), report)
	}
	if f.IO.IsStdoutTTY() {
		if err := printStatsBars(f, opts.By, report); err != nil {
			return err
		}
		fmt.Fprintln(f.IO.ErrOut, summary(output.Plural(len(report.Groups), "group")))
		return nil
	}
	t := output.NewTable(f.IO, "COUNT", "SHARE", opts.By)
	for _, g := range report.Groups {
		t.Row(fmt.Sprint(g.Count), fmt.Sprintf("%.1f%%", 100*float64(g.Count)/float64(max(report.Total, 1))), cmp.Or(deref(g.Value), noValue(opts.By)))
	}
	if err := t.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(f.IO.ErrOut, summary(output.Plural(len(report.Groups), "group")))
	return nil
}

// printStatsBars is the terminal form of the stats table: a bar in each
// row, sized to the terminal's width, drawn in the terminal's colours.
func printStatsBars(f *Factory, by string, rep StatsReport) error {
	width := f.IO.TerminalWidth()
	if width <= 0 {
		width = 80
	}
	bw := report.TermBarWidth(width)
	labelW := max(width-6-2-6-2-bw-2, 8)
	r := f.IO.Renderer()
	bar := r.NewStyle().Foreground(lipgloss.Color("4"))
	head := r.NewStyle().Bold(true)
	maxN := 0
	for _, g := range rep.Groups {
		maxN = max(maxN, g.Count)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s  %s  %s  %s\n", head.Render(" COUNT"), head.Render(" SHARE"), head.Render(fmt.Sprintf("%-*s", bw, "")), head.Render(strings.ToUpper(by)))
	for _, g := range rep.Groups {
		label := []rune(output.Escape(cmp.Or(deref(g.Value), noValue(by))))
		if len(label) > labelW {
			label = append(label[:labelW-1], '…')
		}
		fmt.Fprintf(&b, "%6d  %5.1f%%  %s  %s\n", g.Count, 100*float64(g.Count)/float64(max(rep.Total, 1)),
			bar.Render(report.Bar(g.Count, maxN, bw)), string(label))
	}
	_, err := io.WriteString(f.IO.Out, b.String())
	return err
}
