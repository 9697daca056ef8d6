package pushdlqcmd

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/deadletter/deadletter/internal/cli/cmdutil"
	"github.com/deadletter/deadletter/internal/cli/output"
	"github.com/deadletter/deadletter/internal/pushpolicy"
	"github.com/deadletter/deadletter/internal/report"
	"github.com/deadletter/deadletter/internal/sqsmove"
	"github.com/deadletter/deadletter/internal/triage"
	"github.com/deadletter/deadletter/internal/workflow/dlqsession"
)

// InspectOptions are pushdlq inspect's inputs.
type InspectOptions struct {
	Factory *Factory
	Queue   dlqsession.QueueOptions
	Sample  int
	All     bool
	HTML    string
	Since   string
	Output  *cmdutil.Output
	// since is what --since resolved to (nil without it).
	since *cmdutil.SinceWindow
}

// NewCmdInspect builds `pushdlq inspect`.
func NewCmdInspect(f *Factory) *cobra.Command {
	opts := &InspectOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "inspect --dlq URL|NAME [--sample N | --all] [--since SPAN]",
		Short: "Summarise the DLQ without consuming it",
		Long: `Read a sample of the DLQ (--sample, default 100) or all of it (--all) and
summarise it: queue depth, counts by error code, priority and action, the
createdAt range with an hourly histogram, messages without error metadata,
malformed bodies, and a suggested --window and --codes for the dominant
failure. On a terminal, each error code's createdAt histogram is also drawn as
a one-line sparkline. --html FILE writes the same as a self-contained page.

--since 30m, 6h, 2d or 1w summarises only the messages read whose createdAt
lies in the window from now minus that to now (printed as absolute UTC
times); the others read, created before it or without a createdAt, are
counted apart. SQS cannot select by time: the messages are read as for any
inspection (--sample reads the first N received, not the newest).

Nothing is deleted. Messages are received with a visibility timeout that
covers the scan and made visible again at the end; SQS has no peek, so
reading raises each message's receive count.`,
		Example: `  pushdlq inspect --dlq push-dlq
  pushdlq inspect --dlq https://sqs.us-east-1.amazonaws.com/123456789012/push-dlq --all -o json
  pushdlq inspect --dlq push-dlq --all --since 6h`,
		Args: cmdutil.UsageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.Output.Validate(); err != nil {
				return err
			}
			if opts.Queue.DLQ == "" {
				return cmdutil.UsageErrorf("--dlq is required")
			}
			if err := validateQueue(opts.Queue); err != nil {
				return err
			}
			if opts.All && cmd.Flags().Changed("sample") {
				return cmdutil.UsageErrorf("--sample and --all are mutually exclusive")
			}
			if opts.Sample < 1 {
				return cmdutil.UsageErrorf("--sample %d: want at least 1", opts.Sample)
			}
			if opts.Since != "" {
				w, err := cmdutil.ResolveSince(opts.Since, f.Now())
				if err != nil {
					return err
				}
				opts.since = &w
			}
			return runInspect(cmd.Context(), opts)
		},
	}
	addQueueFlags(cmd, &opts.Queue, true)
	cmd.Flags().IntVar(&opts.Sample, "sample", 100, "read this many messages")
	cmd.Flags().BoolVar(&opts.All, "all", false, "read every message")
	cmd.Flags().StringVar(&opts.Since, "since", "", "summarise only the messages created in the last 30m, 6h, 2d or 1w (units s, m, h, d, w)")
	cmd.Flags().StringVar(&opts.HTML, "html", "", "also write a self-contained HTML report to this file: the createdAt histogram by error code with the suggested window, depth by priority, malformed messages")
	opts.Output = cmdutil.AddOutputFlag(cmd, "table", "json")
	return cmd
}

// InspectReport is the -o json form of pushdlq inspect.
type InspectReport struct {
	Queue           string      `json:"queue"`
	Visible         int64       `json:"visible"`
	InFlight        int64       `json:"in_flight"`
	Delayed         int64       `json:"delayed"`
	Scanned         int         `json:"scanned"`
	Sample          bool        `json:"sample"`
	ByCode          []count     `json:"by_code"`
	ByPriority      []count     `json:"by_priority"`
	ByAction        []count     `json:"by_action"`
	CreatedAtForms  []count     `json:"created_at_forms"`
	CreatedAtMin    *string     `json:"created_at_min"`
	CreatedAtMax    *string     `json:"created_at_max"`
	Hourly          []count     `json:"hourly"`
	NoErrorMetadata int         `json:"no_error_metadata"`
	Malformed       []count     `json:"malformed"`
	Suggestion      *suggestion `json:"suggestion"`
	SuggestedArgs   *string     `json:"suggested_args"`
	// InFlightLimit: SQS's in-flight limit stopped the scan; the report
	// covers the messages read before it (and Sample is true).
	InFlightLimit bool `json:"in_flight_limit"`
	// Since is the --since window resolved (START/END, UTC; null without
	// it): the report (Scanned and every count) covers the messages read
	// that were created in it, and OutsideSince counts the others read
	// (created outside it, or without a createdAt), which are in no other
	// count.
	Since        *string `json:"since"`
	SinceSpan    *string `json:"since_span"`
	OutsideSince int     `json:"outside_since"`
}

func runInspect(ctx context.Context, opts *InspectOptions) error {
	f := opts.Factory
	s, err := openSession(ctx, f, opts.Queue)
	if err != nil {
		return err
	}
	s.Banner("inspect")
	if s.Queue.InFlight > 0 {
		fmt.Fprintf(f.IO.ErrOut, "note: %s; they are not in this report\n", inFlightNote(s.Queue.Visible, s.Queue.InFlight))
	}
	t := newTally()
	pt := triage.NewPush()
	limit := opts.Sample
	if opts.All {
		limit = 0
	}
	outside := 0
	overLimit, err := s.ScanAndRelease(ctx, limit, func(m *sqsmove.Message) {
		c := pushpolicy.ParseCommand(m.Body)
		if w := opts.since; w != nil && !(c.HasCreatedAt && c.CreatedAt >= w.Start.UnixMilli() && c.CreatedAt <= w.End.UnixMilli()) {
			outside++
			return
		}
		t.add(c)
		pt.Add(c)
	})
	if err != nil {
		return err
	}
	rep := inspectReport(s.Queue, t, !opts.All || overLimit != nil)
	rep.InFlightLimit = overLimit != nil
	if w := opts.since; w != nil {
		window := w.Window()
		rep.Since, rep.SinceSpan, rep.OutsideSince = &window, &w.Given, outside
	}
	if overLimit != nil {
		defer fmt.Fprintln(f.IO.ErrOut, inFlightLimitNote(overLimit, s.Queue.Visible+s.Queue.InFlight, "this report covers only them; every message is released"))
	}
	if opts.HTML != "" {
		if err := writeInspectHTML(f, opts.HTML, rep, t, pushTriageRows(pt, f, opts.Queue.DLQ)); err != nil {
			return err
		}
	}
	if opts.Output.Value == "json" {
		if err := output.WriteJSON(f.IO.Out, rep); err != nil {
			return err
		}
	} else {
		var sparks []string
		if f.IO.IsStdoutTTY() {
			sparks = sparklines(t, f.IO.TerminalWidth())
		}
		if err := printInspect(output.TerminalOut(f.IO), rep, sparks); err != nil {
			return err
		}
	}
	if overLimit != nil {
		return cmdutil.PartialError
	}
	return nil
}

// writeInspectHTML writes the report page of an inspection.
func writeInspectHTML(f *Factory, path string, rep InspectReport, t *tally, triageRows []report.TriageRow) error {
	p := report.PushDLQ{Queue: rep.Queue, Visible: rep.Visible, InFlight: rep.InFlight, Delayed: rep.Delayed,
		Scanned: rep.Scanned, Sample: rep.Sample, CodeMinutes: t.codeMinutes, CodeName: pushpolicy.CodeName, ByPriority: t.ByPriority}
	for _, m := range rep.Malformed {
		p.Malformed = append(p.Malformed, report.Count{Label: m.Key + " " + m.Name, N: m.Count})
	}
	if sg := rep.Suggestion; sg != nil {
		if s, e, err := pushpolicy.ParseWindow(sg.Window); err == nil {
			p.Window = &[2]int64{s, e}
			p.WindowArgs = fmt.Sprintf("--window %s --codes %d", sg.Window, sg.Code)
		}
	}
	scope := "every message"
	if rep.Sample {
		scope = "a sample of " + output.Plural(rep.Scanned, "message")
	}
	subtitle := []string{
		rep.Queue,
		fmt.Sprintf("Depth before the scan: %d visible, %d in flight, %d delayed; read %s (%s)", rep.Visible, rep.InFlight, rep.Delayed, output.Plural(rep.Scanned, "message"), scope),
	}
	if rep.Since != nil {
		subtitle[1] = fmt.Sprintf("Depth before the scan: %d visible, %d in flight, %d delayed; read %s (%s)", rep.Visible, rep.InFlight, rep.Delayed, output.Plural(rep.Scanned+rep.OutsideSince, "message"), scope)
		subtitle = append(subtitle, fmt.Sprintf("Counted: the %d created since %s, %s (UTC); %d outside it (created before or after it, or undated) left out",
			rep.Scanned, *rep.SinceSpan, *rep.Since, rep.OutsideSince))
	}
	page := report.PushDLQPage(p, "Push DLQ report: "+sqsmove.Name(rep.Queue), subtitle)
	note := "From the messages read."
	if rep.Sample {
		note = "From a sample only: 'pushdlq triage' reads every message."
	}
	page.Sections = append([]report.Section{report.TriageSectionCounting(triageRows, note, "message")}, page.Sections...)
	page.Generated = f.Now().UTC().Format("2006-01-02 15:04:05Z") + " by pushdlq inspect"
	var b bytes.Buffer
	if err := report.Write(&b, page); err != nil {
		return err
	}
	if err := cmdutil.WriteFileAtomic(path, b.Bytes()); err != nil {
		return err
	}
	fmt.Fprintf(f.IO.ErrOut, "wrote %s\n", path)
	return nil
}

// sparklines draws each error code's createdAt histogram as one line, over
// the scan's createdAt range, sized to the terminal.
func sparklines(t *tally, width int) []string {
	if !t.HasCreated {
		return nil
	}
	if width <= 0 {
		width = 80
	}
	digits := 1
	for _, c := range t.ByCode {
		digits = max(digits, len(strconv.Itoa(c)))
	}
	n := min(max(width-35-digits, 10), 60) // "  code   name  " is 34 columns, then " count"
	codes := make([]int, 0, len(t.codeMinutes))
	for c := range t.codeMinutes {
		codes = append(codes, c)
	}
	slices.SortFunc(codes, func(a, b int) int { return cmp.Or(cmp.Compare(t.ByCode[b], t.ByCode[a]), cmp.Compare(a, b)) })
	var out []string
	for _, c := range codes {
		key, name := codeLabel(c)
		out = append(out, fmt.Sprintf("  %-6s %-24s %s %d", key, name, report.Sparkline(report.Buckets(t.codeMinutes[c], t.MinCreated, t.MaxCreated, n)), t.ByCode[c]))
	}
	return out
}

func inspectReport(q sqsmove.Queue, t *tally, sample bool) InspectReport {
	rep := InspectReport{
		Queue: q.URL, Visible: q.Visible, InFlight: q.InFlight, Delayed: q.Delayed,
		Scanned: t.Scanned, Sample: sample,
		ByCode:          byCount(t.ByCode, codeLabel),
		ByPriority:      byCount(t.ByPriority, plainLabel[int]),
		ByAction:        byCount(t.ByAction, plainLabel[string]),
		CreatedAtForms:  byCount(t.ByForm, plainLabel[pushpolicy.CreatedAtForm]),
		NoErrorMetadata: t.NoErrorMetadata,
		Malformed:       byCount(t.Problems, reasonLabel),
		Suggestion:      t.suggest(),
	}
	if t.HasCreated {
		lo, hi := isoMs(t.MinCreated), isoMs(t.MaxCreated)
		rep.CreatedAtMin, rep.CreatedAtMax = &lo, &hi
	}
	hours := make([]int64, 0, len(t.Hourly))
	for h := range t.Hourly {
		hours = append(hours, h)
	}
	slices.Sort(hours)
	for _, h := range hours {
		rep.Hourly = append(rep.Hourly, count{Key: time.UnixMilli(h).UTC().Format("2006-01-02T15:04Z"), Count: t.Hourly[h]})
	}
	if rep.Suggestion != nil {
		args := fmt.Sprintf("--window %s --codes %d", rep.Suggestion.Window, rep.Suggestion.Code)
		rep.SuggestedArgs = &args
	}
	return rep
}

func printInspect(w io.Writer, r InspectReport, sparks []string) error {
	var b strings.Builder
	scope := "all"
	if r.Sample {
		scope = "a sample"
	}
	fmt.Fprintf(&b, "Queue       %s\n", r.Queue)
	fmt.Fprintf(&b, "Depth       %d visible, %d in flight, %d delayed (approximate, before the scan)\n", r.Visible, r.InFlight, r.Delayed)
	if r.InFlight > 0 {
		fmt.Fprintf(&b, "            %s\n", inFlightNote(r.Visible, r.InFlight))
	}
	if r.Since != nil {
		fmt.Fprintf(&b, "Since       %s: %s (on createdAt)\n", *r.SinceSpan, *r.Since)
		fmt.Fprintf(&b, "Scanned     %s (%s): %d created in that window, counted below;\n", output.Plural(r.Scanned+r.OutsideSince, "message"), scope, r.Scanned)
		fmt.Fprintf(&b, "            %d outside it (created before or after it, or undated) left out\n", r.OutsideSince)
	} else {
		fmt.Fprintf(&b, "Scanned     %s (%s)\n", output.Plural(r.Scanned, "message"), scope)
	}
	if r.CreatedAtMin != nil {
		fmt.Fprintf(&b, "createdAt   %s … %s\n", *r.CreatedAtMin, *r.CreatedAtMax)
	}
	fmt.Fprintf(&b, "No error metadata (manual redrive): %d\n", r.NoErrorMetadata)
	section := func(title string, rows []count, named bool) {
		if len(rows) == 0 {
			return
		}
		fmt.Fprintf(&b, "\n%s\n", title)
		for _, c := range rows {
			if named {
				fmt.Fprintf(&b, "  %-22s %-28s %d\n", c.Key, c.Name, c.Count)
			} else {
				fmt.Fprintf(&b, "  %-22s %d\n", c.Key, c.Count)
			}
		}
	}
	section("By error code", r.ByCode, true)
	section("By priority", r.ByPriority, false)
	section("By action", r.ByAction, false)
	section("createdAt written as", r.CreatedAtForms, false)
	section("Malformed (never replayed)", r.Malformed, true)
	if len(r.Hourly) > 0 {
		fmt.Fprintf(&b, "\ncreatedAt by hour (UTC)\n")
		peak := 0
		for _, h := range r.Hourly {
			peak = max(peak, h.Count)
		}
		var last time.Time
		for _, h := range r.Hourly {
			// Only the hours holding messages are listed: the ones
			// between are said, so that a gap reads as one.
			if at, err := time.Parse("2006-01-02T15:04Z", h.Key); err == nil {
				if from := last.Add(time.Hour); !last.IsZero() && at.After(from) {
					to := at.Format("15:04")
					if at.YearDay() != from.YearDay() || at.Year() != from.Year() {
						to = at.Format("2006-01-02 15:04")
					}
					fmt.Fprintf(&b, "  (no messages %s–%s)\n", from.Format("2006-01-02 15:04"), to)
				}
				last = at
			}
			bar := strings.Repeat("█", max(1, h.Count*40/peak))
			fmt.Fprintf(&b, "  %s  %-40s %s\n", h.Key, bar, strconv.Itoa(h.Count))
		}
	}
	if len(sparks) > 0 {
		fmt.Fprintf(&b, "\ncreatedAt by error code (%s … %s)\n", *r.CreatedAtMin, *r.CreatedAtMax)
		for _, l := range sparks {
			fmt.Fprintln(&b, l)
		}
	}
	if r.Suggestion != nil {
		sg := r.Suggestion
		fmt.Fprintf(&b, "\nDominant failure: %d %s (%s; %d in its main burst)\nSuggested:  %s\n", sg.Code, sg.Name, output.Plural(sg.Count, "message"), sg.InWindow, *r.SuggestedArgs)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// inFlightNote says who holds the messages a scan cannot see.
func inFlightNote(visible, inFlight int64) string {
	return fmt.Sprintf("%d visible, %d in flight: another consumer or an interrupted run holds them", visible, inFlight)
}
