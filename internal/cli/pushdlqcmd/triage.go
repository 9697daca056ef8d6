package pushdlqcmd

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/deadletter/deadletter/internal/cli/cmdutil"
	"github.com/deadletter/deadletter/internal/cli/output"
	"github.com/deadletter/deadletter/internal/pushpolicy"
	"github.com/deadletter/deadletter/internal/report"
	"github.com/deadletter/deadletter/internal/shellword"
	"github.com/deadletter/deadletter/internal/sqsmove"
	"github.com/deadletter/deadletter/internal/triage"
	"github.com/deadletter/deadletter/internal/workflow/dlqsession"
)

// TriageOptions are pushdlq triage's inputs.
type TriageOptions struct {
	Factory   *Factory
	Queue     dlqsession.QueueOptions
	Sample    int
	QueueBase string
	Output    *cmdutil.Output
	// Audit is where the replay history is read (--audit), MaxReplays the
	// replay guard's limit its replay commands meet.
	Audit      string
	MaxReplays int
}

// NewCmdTriage builds `pushdlq triage`.
func NewCmdTriage(f *Factory) *cobra.Command {
	opts := &TriageOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "triage --dlq URL|NAME [--queue-base-url URL]",
		Short: "Group the DLQ by error code and burst, say whether a replay will help, and print the replay to run",
		Long: `Read the whole DLQ (or --sample N messages) without consuming it, as
inspect does, and group the messages by error code and burst: runs of
createdAt minutes with no gap over 15 minutes. Each group gets a verdict
from the code table in docs/triage.md (1001, 1004 and 3001 transient, 2002
permanent, 2003 transient when its burst overlaps a burst of a transient
code, a notification written late, else permanent, a deleted notification;
2001, 9000 and messages without error metadata unknown) and, when a replay
will help, the exact command:

  pushdlq replay --dlq Q --queue-base-url URL --window <burst> --codes C --dry-run

The window selects exactly that burst's messages of that code. Messages that
no replay selects (not JSON, no priority, no createdAt) are their own groups.`,
		Example: `  pushdlq triage --dlq push-dlq --queue-base-url https://sqs.us-east-1.amazonaws.com/123456789012/push-
  pushdlq triage --dlq push-dlq -o json`,
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
			if opts.Sample < 0 {
				return cmdutil.UsageErrorf("--sample %d: want 0 (every message) or more", opts.Sample)
			}
			return runTriage(cmd.Context(), opts)
		},
	}
	addQueueFlags(cmd, &opts.Queue, true)
	cmd.Flags().IntVar(&opts.Sample, "sample", 0, "read only this many messages (0: every message)")
	cmd.Flags().StringVar(&opts.QueueBase, "queue-base-url", "", "prefix of the priority queues, put in the replay commands (default $PUSH_QUEUE_BASE_URL)")
	cmd.Flags().StringVar(&opts.Audit, "audit", "", "read the replay history at s3://BUCKET/PREFIX (default $DEADLETTER_AUDIT; else the local state directory)")
	cmd.Flags().IntVar(&opts.MaxReplays, "max-replays", 3, "the replay guard's limit the replay commands meet, as replay's (0: no limit)")
	opts.Output = cmdutil.AddOutputFlag(cmd, "table", "json")
	return cmd
}

// TriageReport is the -o json form of pushdlq triage (docs/triage.md).
type TriageReport struct {
	Schema  string        `json:"schema"`
	Queue   string        `json:"queue"`
	Scanned int           `json:"scanned"`
	Sample  bool          `json:"sample"`
	Groups  []TriageGroup `json:"groups"`
}

// TriageGroup is one group of a push triage.
type TriageGroup struct {
	Code           *int              `json:"code"` // null: no error code
	Name           string            `json:"name"`
	Class          triage.Class      `json:"class"`
	Verdict        string            `json:"verdict"`
	Why            string            `json:"why"`
	Count          int               `json:"count"`
	Window         *string           `json:"window"`
	FirstCreatedAt *string           `json:"first_created_at"`
	LastCreatedAt  *string           `json:"last_created_at"`
	Templates      []TriageCount     `json:"templates"`
	Priorities     []TriageCount     `json:"priorities"`
	Command        *string           `json:"command"`
	Problem        pushpolicy.Reason `json:"problem,omitempty"`
	// ReplayedBefore counts the group's messages whose notification the
	// audit shows replayed already; HeldBack those at the replay guard's
	// limit, which its replay command holds back.
	ReplayedBefore int `json:"replayed_before"`
	HeldBack       int `json:"held_back"`
}

// TriageCount is a value and how many messages have it.
type TriageCount struct {
	Value string `json:"value"`
	Count int    `json:"count"`
}

// TriageSchema names the JSON form's version.
const TriageSchema = "deadletter.pushdlq.triage/v1"

func runTriage(ctx context.Context, opts *TriageOptions) error {
	f := opts.Factory
	s, err := openSession(ctx, f, opts.Queue)
	if err != nil {
		return err
	}
	s.Banner("triage")
	t := triage.NewPush()
	hist := f.readReplayHistory(ctx, opts.Audit, opts.MaxReplays)
	// The messages of notifications replayed before: few, kept to count
	// them by group.
	var before []replayedMessage
	limit, err := s.ScanAndRelease(ctx, opts.Sample, func(m *sqsmove.Message) {
		c := pushpolicy.ParseCommand(m.Body)
		t.Add(c)
		if len(hist.replays) > 0 {
			if id := pushpolicy.NotificationID(m.Body); hist.count(id) > 0 {
				before = append(before, replayedMessage{c, hist.atLimit(id)})
			}
		}
	})
	if limit != nil {
		defer fmt.Fprintln(f.IO.ErrOut, inFlightLimitNote(limit, s.Queue.Visible+s.Queue.InFlight, "this triage covers only them; every message is released"))
	}
	if err != nil {
		return err
	}
	rep := TriageReport{Schema: TriageSchema, Queue: s.Queue.URL, Scanned: t.Total, Sample: opts.Sample > 0 || limit != nil}
	base := opts.QueueBase
	if base == "" {
		base = f.Getenv("PUSH_QUEUE_BASE_URL")
	}
	for _, g := range t.Groups() {
		tg := triageGroup(g, f, opts.Queue.DLQ, base)
		tg.noteReplayed(g, before, opts.MaxReplays)
		rep.Groups = append(rep.Groups, tg)
	}
	if rep.Groups == nil {
		rep.Groups = []TriageGroup{}
	}
	if opts.Output.Value == "json" {
		if err := output.WriteJSON(output.JSONOut(f.IO), rep); err != nil || limit == nil {
			return err
		}
		return cmdutil.PartialError
	}
	if f.IO.IsStdoutTTY() {
		if err := output.WriteTriage(f.IO, triageView(rep)); err != nil {
			return err
		}
	} else if err := printTriage(f.IO.Out, rep); err != nil {
		return err
	}
	fmt.Fprintf(f.IO.ErrOut, "%s in %s\n", output.Plural(rep.Scanned, "message"), output.Plural(len(rep.Groups), "group"))
	if limit != nil {
		return cmdutil.PartialError
	}
	return nil
}

func triageGroup(g *triage.PushGroup, f *Factory, dlq, base string) TriageGroup {
	out := TriageGroup{Class: g.Rule.Class, Verdict: g.Verdict(), Why: g.Rule.Why, Count: g.Count, Problem: g.Problem}
	if g.Code != triage.NoCode {
		code := g.Code
		out.Code = &code
		out.Name = pushpolicy.CodeName(g.Code)
	}
	for _, tpl := range g.SortedTemplates() {
		out.Templates = append(out.Templates, TriageCount{Value: tpl, Count: g.Templates[tpl]})
	}
	for p, n := range g.Priorities {
		out.Priorities = append(out.Priorities, TriageCount{Value: "P" + strconv.Itoa(p), Count: n})
	}
	sortCounts(out.Priorities)
	if g.HasWindow {
		w := g.Window()
		first, last := isoMs(g.From), isoMs(g.To)
		out.Window, out.FirstCreatedAt, out.LastCreatedAt = &w, &first, &last
	}
	if g.Problem == pushpolicy.ReasonNone && g.HasWindow && g.Rule.Class == triage.Transient && g.Code != triage.NoCode {
		words := []string{"pushdlq", "replay", "--dlq", dlq}
		if s := f.AWS; s != nil {
			for _, fl := range [][2]string{{"--profile", s.Profile}, {"--region", s.Region}, {"--endpoint-url", s.EndpointURL}} {
				if fl[1] != "" {
					words = append(words, fl[0], fl[1])
				}
			}
		}
		if base == "" {
			base = "BASE" // named in the verdict: triage was not told
			out.Verdict += " (pass --queue-base-url to triage to fill in the base)"
		}
		words = append(words, "--queue-base-url", base, "--window", *out.Window, "--codes", strconv.Itoa(g.Code), "--dry-run")
		c := shellword.Join(words...)
		out.Command = &c
	}
	return out
}

func sortCounts(c []TriageCount) {
	slices.SortFunc(c, func(a, b TriageCount) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Value, b.Value))
	})
}

// printTriage writes one tab-separated line per group, for pipes (a
// terminal gets triageView).
func printTriage(w io.Writer, rep TriageReport) error {
	for _, g := range rep.Groups {
		window := "-"
		if g.Window != nil {
			window = *g.Window
		}
		next := "no replay"
		if g.Command != nil {
			next = *g.Command
		}
		if err := output.WriteFields(w, strconv.Itoa(g.Count), string(g.Class), g.code(), window, g.template(), g.Verdict, "next: "+next); err != nil {
			return err
		}
	}
	return nil
}

// code is the group's error code and name ("-" without one).
func (g TriageGroup) code() string {
	if g.Code == nil {
		return "-"
	}
	return strconv.Itoa(*g.Code) + " " + g.Name
}

// step is where the group comes in the advice: replay (0), look (1),
// never as it is (2).
func (g TriageGroup) step() int {
	switch {
	case g.Command != nil:
		return 0
	case g.Class == triage.Unknown:
		return 1
	}
	return 2
}

// template is the commonest message template, and how many others.
func (g TriageGroup) template() string {
	switch len(g.Templates) {
	case 0:
		return "-"
	case 1:
		return g.Templates[0].Value
	}
	return fmt.Sprintf("%s (+%d)", g.Templates[0].Value, len(g.Templates)-1)
}

// when is the burst's first and last createdAt to the minute, shortened
// ("2024-03-01 10:00..10:14"), or why the group has no window.
func (g TriageGroup) when() string {
	if g.FirstCreatedAt == nil {
		return cmp.Or(string(g.Problem), "-")
	}
	minute := func(iso string) string { return strings.Replace(iso[:min(len(iso), 16)], "T", " ", 1) }
	first, last := minute(*g.FirstCreatedAt), minute(*g.LastCreatedAt)
	switch {
	case first == last:
		return first
	case len(first) == 16 && len(last) == 16 && first[:11] == last[:11]: // the same day
		return first + ".." + last[11:]
	}
	return first + ".." + last
}

// triageView is the terminal form: per group a header row (count, class,
// burst, code, the commonest template cut to fit), the verdict, and the
// replay command on its own line; first, what to do first. The groups are
// shown in the order of that advice (replay, look, never; the largest
// first in each), so that the "first:" line names the groups at the top.
func triageView(rep TriageReport) output.TriageView {
	v := output.TriageView{Unit: "message"}
	var replay, replayG, look, never int
	groups := slices.Clone(rep.Groups)
	slices.SortStableFunc(groups, func(a, b TriageGroup) int { return cmp.Compare(a.step(), b.step()) })
	for _, g := range groups {
		code := "no error code"
		if g.Code != nil {
			code = g.code()
		}
		card := output.TriageCard{Count: g.Count, Class: string(g.Class), Cells: []string{g.when(), code, g.template()}, Verdicts: []string{g.Verdict}}
		switch {
		case g.Command != nil:
			card.Command = *g.Command
			replay, replayG = replay+g.Count, replayG+1
		case g.Class == triage.Unknown:
			look += g.Count
		default:
			never += g.Count
		}
		v.Groups = append(v.Groups, card)
	}
	if replay > 0 {
		v.Steps = append(v.Steps, fmt.Sprintf("replay %s (%s) once the cause is gone: each pushdlq replay with --dry-run, then without",
			output.Plural(replay, "message"), output.Plural(replayG, "burst")))
	}
	if look > 0 {
		v.Steps = append(v.Steps, fmt.Sprintf("look at the %s no rule classifies (pushdlq inspect)", output.Plural(look, "message")))
	}
	v.Idle = "the DLQ is empty"
	if never > 0 {
		v.Idle = fmt.Sprintf("nothing to replay: %s will never succeed as they are", output.Plural(never, "message"))
	}
	if rep.Sample {
		v.Notes = append(v.Notes, fmt.Sprintf("a sample: only %s of the DLQ were read", output.Plural(rep.Scanned, "message")))
	}
	return v
}

// pushTriageRows are a push triage's groups as the report page shows them.
func pushTriageRows(t *triage.PushTriage, f *Factory, dlq string) []report.TriageRow {
	var rows []report.TriageRow
	for _, g := range t.Groups() {
		tg := triageGroup(g, f, dlq, f.Getenv("PUSH_QUEUE_BASE_URL"))
		what := "no error code"
		if tg.Code != nil {
			what = strconv.Itoa(*tg.Code) + " " + tg.Name
		}
		if tg.Window != nil {
			what += " in " + *tg.Window
		} else if tg.Problem != "" {
			what += ": " + string(tg.Problem)
		}
		next := "no replay"
		if tg.Command != nil {
			next = *tg.Command
		}
		rows = append(rows, report.TriageRow{Count: tg.Count, Class: string(tg.Class), What: what, Verdict: tg.Verdict, Next: next})
	}
	return rows
}

// replayedMessage is a message whose notification the audit shows
// replayed already; atLimit: the replay guard holds it back.
type replayedMessage struct {
	c       pushpolicy.Command
	atLimit bool
}

// noteReplayed counts the group's messages replayed before, and says in
// the verdict of a group with a replay command how many of them it holds
// back.
func (tg *TriageGroup) noteReplayed(g *triage.PushGroup, before []replayedMessage, max int) {
	if tg.Command == nil || !g.HasWindow {
		return // only a burst with a replay command: what it would send
	}
	for _, m := range before {
		code := triage.NoCode
		if m.c.HasErrorCode {
			code = m.c.ErrorCode
		}
		// The burst's window: its first minute to the end of its last.
		if code != g.Code || !m.c.HasCreatedAt || m.c.CreatedAt < g.From || m.c.CreatedAt >= g.To+60_000 {
			continue
		}
		tg.ReplayedBefore++
		if m.atLimit {
			tg.HeldBack++
		}
	}
	if tg.ReplayedBefore == 0 {
		return
	}
	tg.Verdict += fmt.Sprintf("; %s replayed already", output.Plural(tg.ReplayedBefore, "message"))
	if tg.HeldBack > 0 {
		tg.Verdict += fmt.Sprintf(", %d of them at --max-replays %d: the replay holds them back", tg.HeldBack, max)
	}
}
