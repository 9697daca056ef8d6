package pushdlqcmd

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/deadletter/deadletter/internal/audit"
	"github.com/deadletter/deadletter/internal/cli/cmdutil"
	"github.com/deadletter/deadletter/internal/cli/output"
	"github.com/deadletter/deadletter/internal/pushpolicy"
	"github.com/deadletter/deadletter/internal/shellword"
	"github.com/deadletter/deadletter/internal/sqsmove"
	"github.com/deadletter/deadletter/internal/workflow/dlqsession"
	"github.com/deadletter/deadletter/internal/workflow/trace"
)

// TraceOptions are pushdlq trace's inputs.
type TraceOptions struct {
	Factory      *Factory
	Queue        dlqsession.QueueOptions
	Notification string
	Window       string
	Codes        string
	QueueBase    string
	Output       *cmdutil.Output
	// Audit is where the replay history is read (--audit), MaxReplays the
	// replay guard's limit the verdicts apply.
	Audit      string
	MaxReplays int
}

// TraceSchema names the JSON form's version (docs/pushdlq.md).
const TraceSchema = "deadletter.pushdlq.trace/v1"

// TraceReport is the -o json form of pushdlq trace.
type TraceReport struct {
	Schema       string              `json:"schema"`
	Queue        string              `json:"queue"`
	Notification string              `json:"notification"`
	Scanned      int                 `json:"scanned"`
	Messages     []trace.PushMessage `json:"messages"`
	// Window and Codes are the policy judged: as given, or (PolicyGiven
	// false) the narrowest that covers this notification's messages.
	Window      *string `json:"window"`
	Codes       *string `json:"codes"`
	PolicyGiven bool    `json:"policy_given"`
	Replayed    int     `json:"replayed"`
	// Others counts the other notifications' messages the same replay
	// would send: a replay selects by window and codes, not notification.
	Others  int     `json:"others_replayed"`
	Command *string `json:"command"` // the replay's --dry-run; null: nothing to replay
	// InFlightLimit: SQS's in-flight limit stopped the scan early.
	InFlightLimit bool `json:"in_flight_limit"`
	// Replays are the recorded runs that replayed this notification,
	// oldest first (null: the audit could not be read); HeldBack: it is
	// at the replay guard's limit (MaxReplays), so a replay holds its
	// messages back.
	Replays    []audit.Replay `json:"replays"`
	MaxReplays int            `json:"max_replays"`
	HeldBack   bool           `json:"held_back"`
}

// NewCmdTrace builds `pushdlq trace`.
func NewCmdTrace(f *Factory) *cobra.Command {
	opts := &TraceOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "trace --dlq URL|NAME --notification ID [--window START/END --codes LIST]",
		Short: "Every DLQ message of one notification, and whether a replay would send it",
		Long: `Read the whole DLQ without consuming it (as inspect: received, then made
visible again; SQS has no peek, so each receive count rises by one) and list
every message of one notification (the body's notificationId), oldest
first: error code, createdAt, receive count and priority.

Each message is judged by the replay's own rules (the window on createdAt,
the codes, a usable body): with --window and --codes, those; without, the
narrowest window and codes that cover this notification's messages. The
last line is the 'pushdlq replay ... --dry-run' that would replay them, and
how many messages of other notifications the same window and codes would
replay too (a replay selects by window and codes, never by notification).

It also says how many times the audit records show the notification
replayed already, when, by whom and why (the records at --audit,
$DEADLETTER_AUDIT or the local state directory); at --max-replays of them
(default 3, as replay's), a replay holds its messages back, and the
verdicts say so.`,
		Example: `  pushdlq trace --dlq push-dlq --notification 6f1c2d3e
  pushdlq trace --dlq push-dlq --notification 6f1c2d3e --window 2025-11-14T08:30:00Z/2025-11-14T09:00:00Z --codes 1004 -o json`,
		Args: cmdutil.UsageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.Output.Validate(); err != nil {
				return err
			}
			if opts.Queue.DLQ == "" {
				return cmdutil.UsageErrorf("--dlq is required")
			}
			if opts.Notification == "" {
				return cmdutil.UsageErrorf("--notification is required")
			}
			if err := validateQueue(opts.Queue); err != nil {
				return err
			}
			if (opts.Window == "") != (opts.Codes == "") {
				return cmdutil.UsageErrorf("--window and --codes go together (neither: the ones covering this notification)")
			}
			return runTrace(cmd.Context(), opts)
		},
	}
	addQueueFlags(cmd, &opts.Queue, true)
	fl := cmd.Flags()
	fl.StringVar(&opts.Notification, "notification", "", "the notification: its notificationId")
	fl.StringVar(&opts.Window, "window", "", "judge with this inclusive createdAt window START/END (with --codes)")
	fl.StringVar(&opts.Codes, "codes", "", "judge with these error codes, comma-separated, or '*' (with --window)")
	fl.StringVar(&opts.QueueBase, "queue-base-url", "", "the priority queues' base URL, for the targets and the command (default $PUSH_QUEUE_BASE_URL)")
	fl.StringVar(&opts.Audit, "audit", "", "read the replay history at s3://BUCKET/PREFIX (default $DEADLETTER_AUDIT; else the local state directory)")
	fl.IntVar(&opts.MaxReplays, "max-replays", 3, "the replay guard's limit the verdicts apply, as replay's (0: no limit)")
	opts.Output = cmdutil.AddOutputFlag(cmd, "text", "json")
	return cmd
}

// traceScan is what trace's scan of the DLQ kept: the messages of the
// traced notification, and the other messages' bodies (counted as what
// the same replay would send too).
type traceScan struct {
	mine    []tracedMessage
	others  []string
	scanned int
}

// tracedMessage is a message of the traced notification, as scanned.
type tracedMessage struct{ id, body, receives string }

// add keeps one scanned message.
func (sc *traceScan) add(m *sqsmove.Message, notification string) {
	sc.scanned++
	if trace.NotificationOf(m.Body) == notification {
		sc.mine = append(sc.mine, tracedMessage{m.MessageID, m.Body, m.Attributes["ApproximateReceiveCount"]})
	} else {
		sc.others = append(sc.others, m.Body)
	}
}

// judge puts in rep what a replay would do with each message of the
// notification: under the policy given, or else the one that covers them
// (trace.CoveringPolicy), the replay guard holding back a notification at
// its limit; and, with a policy, how many other messages that replay
// sends too and the command that runs it.
func (sc *traceScan) judge(f *Factory, opts *TraceOptions, rep *TraceReport, policy pushpolicy.Policy, base string) {
	judged := opts.Window != ""
	if !judged {
		bodies := make([]string, len(sc.mine))
		for i, m := range sc.mine {
			bodies[i] = m.body
		}
		policy, judged = trace.CoveringPolicy(bodies)
	}
	for _, m := range sc.mine {
		pm := trace.PushMessageOf(m.id, m.body, m.receives, policy, base)
		if !judged {
			pm.Reason = "no window and codes would replay it: " + cmdutilOr(pm.Reason, "not replayable")
		}
		if pm.Replayed && rep.HeldBack {
			pm.Replayed = false
			pm.Reason = fmt.Sprintf("held back: replayed %s already (--max-replays %d; 0 sends it)", output.Plural(len(rep.Replays), "time"), opts.MaxReplays)
		}
		if pm.Replayed {
			rep.Replayed++
		}
		rep.Messages = append(rep.Messages, pm)
	}
	trace.SortPush(rep.Messages)
	if judged {
		w, c := isoMs(policy.Start)+"/"+isoMs(policy.End), policy.CodesString()
		if opts.Window != "" {
			w, c = opts.Window, opts.Codes
		}
		rep.Window, rep.Codes = &w, &c
		for _, b := range sc.others {
			if pushpolicy.Decide(pushpolicy.ParseCommand(b), policy, base).Eligible {
				rep.Others++
			}
		}
		if rep.Replayed > 0 {
			// '*' over more than 24 hours, as given: the replay needs
			// --allow-wide-window to accept the policy trace judged.
			wide := policy.Validate(false) != nil
			cmd := replayCommand(f, opts.Queue.DLQ, base, w, c, wide)
			rep.Command = &cmd
		}
	}
}

// runTrace scans the DLQ for the notification, judges each of its
// messages as a replay would, and prints the report.
func runTrace(ctx context.Context, opts *TraceOptions) error {
	f := opts.Factory
	var policy pushpolicy.Policy
	if opts.Window != "" {
		if err := (policyFlags{Window: opts.Window, Codes: opts.Codes, AllowWideWindow: true}).apply(f, &policy); err != nil {
			return err
		}
	}
	base := opts.QueueBase
	if base == "" {
		base = f.Getenv("PUSH_QUEUE_BASE_URL")
	}
	s, err := openSession(ctx, f, opts.Queue)
	if err != nil {
		return err
	}
	s.Banner("trace")
	sc := &traceScan{}
	limit, err := s.ScanAndRelease(ctx, 0, func(m *sqsmove.Message) { sc.add(m, opts.Notification) })
	scanned := sc.scanned
	if limit != nil {
		defer fmt.Fprintln(f.IO.ErrOut, inFlightLimitNote(limit, s.Queue.Visible+s.Queue.InFlight, "this trace covers only them; every message is released"))
	}
	if err != nil {
		return err
	}
	rep := TraceReport{Schema: TraceSchema, Queue: s.Queue.URL, Notification: opts.Notification, Scanned: scanned,
		Messages: []trace.PushMessage{}, PolicyGiven: opts.Window != "", InFlightLimit: limit != nil, MaxReplays: opts.MaxReplays}
	hist := f.readReplayHistory(ctx, opts.Audit, opts.MaxReplays)
	if hist.replays != nil {
		rep.Replays = hist.replays[opts.Notification]
		if rep.Replays == nil {
			rep.Replays = []audit.Replay{}
		}
		rep.HeldBack = hist.atLimit(opts.Notification)
	}
	sc.judge(f, opts, &rep, policy, base)
	if opts.Output.Value == "json" {
		err = output.WriteJSON(output.JSONOut(f.IO), rep)
	} else {
		err = printPushTrace(f, rep)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(f.IO.ErrOut, "%s of %s read %s to notification %s; every message released\n",
		output.Plural(len(rep.Messages), "message"), strconv.Itoa(scanned), output.Agree(len(rep.Messages), "belongs", "belong"), output.OneLine(opts.Notification))
	if limit != nil {
		return cmdutil.PartialError
	}
	return nil
}

func cmdutilOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// replayCommand is the replay's --dry-run for a window and codes, with
// this invocation's AWS flags, as triage builds its own.
func replayCommand(f *Factory, dlq, base, window, codes string, allowWide bool) string {
	words := []string{"pushdlq", "replay", "--dlq", dlq}
	if s := f.AWS; s != nil {
		for _, fl := range [][2]string{{"--profile", s.Profile}, {"--region", s.Region}, {"--endpoint-url", s.EndpointURL}} {
			if fl[1] != "" {
				words = append(words, fl[0], fl[1])
			}
		}
	}
	if base == "" {
		base = "BASE"
	}
	words = append(words, "--queue-base-url", base, "--window", window, "--codes", codes)
	if allowWide {
		words = append(words, "--allow-wide-window")
	}
	return shellword.Join(append(words, "--dry-run")...)
}

// printPushTrace prints the trace: one line per message, the policy, and
// the command alone on its line. Text from the queue is escaped (OneLine);
// a terminal gets the lines folded to its width.
func printPushTrace(f *Factory, rep TraceReport) error {
	width := 1 << 30
	if f.IO.IsStdoutTTY() {
		width = f.IO.TerminalWidth()
		if width <= 0 {
			width = 80
		}
	}
	var b strings.Builder
	line := func(indent, s string) {
		b.WriteString(output.Wrap(output.OneLine(s), width, indent, indent+"    ") + "\n")
	}
	line("", fmt.Sprintf("notification %s: %s in %s (of %d read), oldest first", rep.Notification,
		output.Plural(len(rep.Messages), "message"), rep.Queue, rep.Scanned))
	if rep.Replays != nil {
		l := replaysLine(rep.Replays)
		if rep.HeldBack {
			l += fmt.Sprintf("; at the replay guard's limit (--max-replays %d): a replay holds it back", rep.MaxReplays)
		}
		line("  ", l)
	}
	for _, m := range rep.Messages {
		created, code, prio := "no createdAt", "no code", "no priority"
		if m.CreatedAt != nil {
			created = isoMs(*m.CreatedAt)
		}
		if m.Code != nil {
			code = strconv.Itoa(*m.Code) + " " + m.CodeName
		}
		if m.Priority != nil {
			prio = "P" + strconv.Itoa(*m.Priority)
		}
		// Trace sends nothing: each verdict is what the replay below
		// would do.
		verdict := "would not be replayed: " + m.Reason
		if m.Replayed {
			verdict = "would be replayed to " + *m.Target
		}
		line("  ", fmt.Sprintf("%s  %s  %s  received %d  %s", created, code, prio, m.ReceiveCount, m.MessageID))
		line("      ", "→ "+verdict)
	}
	switch {
	case len(rep.Messages) == 0:
		line("", "→ no message of this notification is in the DLQ")
	case rep.Command == nil:
		line("", "→ no replay would send any of them")
	default:
		how := "covering this notification's messages"
		if rep.PolicyGiven {
			how = "as given"
		}
		line("", fmt.Sprintf("→ %d of %d would be replayed with --window %s --codes %s (%s); %s of other notifications too:",
			rep.Replayed, len(rep.Messages), *rep.Window, *rep.Codes, how, output.Plural(rep.Others, "message")))
		b.WriteString("    " + *rep.Command + "\n")
	}
	_, err := fmt.Fprint(f.IO.Out, b.String())
	return err
}
