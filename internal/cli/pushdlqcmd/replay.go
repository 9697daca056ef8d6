package pushdlqcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"
	"time"

	"github.com/aws/smithy-go"
	"github.com/spf13/cobra"

	"github.com/deadletter/deadletter/internal/audit"
	"github.com/deadletter/deadletter/internal/cli/cmdutil"
	"github.com/deadletter/deadletter/internal/cli/output"
	"github.com/deadletter/deadletter/internal/pushpolicy"
	"github.com/deadletter/deadletter/internal/shellword"
	"github.com/deadletter/deadletter/internal/sqsmove"
	"github.com/deadletter/deadletter/internal/workflow/dlqsession"
	"github.com/deadletter/deadletter/internal/workflow/pushreplay"
)

// ReplayOptions are pushdlq replay's inputs: the run's options, which the
// flags fill (the policy from --window and --codes, or --from-env), and
// what only the command reads.
type ReplayOptions struct {
	Factory *Factory
	pushreplay.Options
	Window          string
	Since           string
	Codes           string
	FromEnv         bool
	AllowWideWindow bool
	Output          *cmdutil.Output
	// given are the flags of the invocation, as given: the command that
	// resumes its run is built from them (resumeCommand), --since as the
	// --window it resolved to.
	given []string
	// since is what --since resolved to (nil without it).
	since *cmdutil.SinceWindow
	// Audit are --reason, --no-audit and --audit; started is the audit
	// record's common part, built from the invocation; audit is where the
	// records are (read by the replay guard, written before the first
	// move).
	Audit   cmdutil.AuditFlags
	started audit.Started
	audit   *auditPlace
}

// NewCmdReplay builds `pushdlq replay`.
func NewCmdReplay(f *Factory) *cobra.Command { return newCmdReplay(f, runReplay) }

// newCmdReplay builds it with the run function given: a test of flag
// resolution (the window a --since names) passes one that keeps the options.
func newCmdReplay(f *Factory, run func(context.Context, *ReplayOptions) error) *cobra.Command {
	opts := &ReplayOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "replay (--dlq URL|NAME | --from-file FILE) --queue-base-url URL (--window START/END | --since SPAN) --codes LIST",
		Short: "Replay a time-boxed, error-code-filtered slice of the DLQ to the priority queues",
		Long: `Replay the DLQ messages whose errorCode is selected (--codes 1004,2003, or '*'
alone) and whose createdAt lies inside the inclusive window (--window
START/END, each ISO-8601 or epoch milliseconds; a time without a zone is UTC,
and a date alone is midnight UTC at the start of that day, so
2025-11-14/2025-11-15 covers the 14th and ends at 2025-11-15T00:00:00.000Z;
or --since 30m, 6h, 2d or 1w, the window from now minus that to now)
to ${queue-base-url}P${priority}, exactly as
the push-dlq processor decides. --from-env reads the processor's variables
(PUSH_DLQ_QUEUE_URL, PUSH_QUEUE_BASE_URL, PROCESS_START_AT, PROCESS_END_AT,
PROCESS_ERROR_CODES), so a runbook's env file works unchanged; flags given
as well win over it.

The window applies to the body's createdAt (epoch milliseconds, a numeric
string or ISO-8601), never to the SQS SentTimestamp. A message without error
metadata (a manual redrive) is eligible only under --codes '*'; a body that is
not JSON or lacks priority or createdAt never is.

Steps:
  1. scan the DLQ, holding each message invisible, and print a plan on stderr:
     the window as resolved instants, eligible counts by code and priority
     with their target queues (each checked: a missing queue is named),
     ineligible counts by reason, messages in flight elsewhere, and the
     identity (account, region, profile, endpoint);
  2. --dry-run stops there and releases every message (exit 3 if a target
     queue is missing; if one could not be checked: no credentials, access
     denied, an endpoint that cannot be reached, one line says why and the
     exit is 4 for credentials or permission, else 1); otherwise confirm, or
     pass --yes when not on a terminal;
  3. send one canary message to each target queue (a missing queue or a
     refused permission stops that target before the rest are touched), then
     the rest in batches of up to 10 messages and 256 KiB; delete from the DLQ
     only what a target accepted;
  4. ineligible messages are released untouched (--ineligible release), or
     parked like the processor does: re-sent to the DLQ with DelaySeconds 900
     and the original deleted (--ineligible park);
  5. end with one summary record, and on stderr the reason for each target
     queue that failed; exit 3 if anything failed or is uncertain.

With --yes, a fresh run from the DLQ with --ineligible release does not wait
for the end of the scan: step 3 starts at the first eligible message
received (each message is journalled as held before its batch is sent), and
the plan is printed once the scan is over, as a record of what was found.

A send whose reply never came (a cut connection, a timeout, a 5xx) is
"uncertain": the message may be in its target, so it is not deleted from the
DLQ. It is journalled as uncertain, counted in the summary and listed there
(possible_duplicate_ids) with the messages a resume sends again.

A message the run no longer holds is never sent: when the run was paused
past --visibility-timeout (SIGSTOP, Ctrl-Z, a frozen machine), or a renewal
of its visibility was refused (another consumer received it), it is left
alone, counted as hold_lost and listed (hold_lost_ids), and the run exits 3;
one whose send was in flight then is listed among possible duplicates.
A delete refused for lack of permission stops the run at once (exit 4),
saying how many messages are in both places; --resume deletes them.

A write-ahead journal (--journal, default under $XDG_STATE_HOME/deadletter)
records which messages the run holds and until when, each batch before it is
sent, and each outcome after. --resume JOURNAL continues a run that was
killed: it first waits until the messages the interrupted run held are
visible again (at most --wait-held; longer, it exits 1 saying until when);
messages the journal shows as sent are deleted from the DLQ instead of being
sent again; uncertain ones (the batch in flight when the run died, and sends
whose reply was lost) are sent again, and are the only possible duplicates.
A fresh replay of a DLQ whose last replay was killed, leaving messages held
or unconfirmed in its journal under $XDG_STATE_HOME/deadletter, is refused
(it would send them again) and prints the --resume command instead.
After the scan, the DLQ's messages that are neither visible nor held by
this run are in flight elsewhere (another consumer, an interrupted run, a
receive whose reply was lost), and delayed ones cannot be read yet: the
plan and the summary count both (in_flight_elsewhere, delayed), and the
run exits 3 whenever either is not zero, never "nothing to replay" and 0.

Every run that moves anything leaves an audit record: who (the AWS caller
identity, the OS user, the host), why (--reason or $DEADLETTER_REASON), the
invocation (secrets redacted), the plan, and each message's outcome with its
notification id. It goes to --audit s3://BUCKET/PREFIX or $DEADLETTER_AUDIT,
else to the local state directory (not shared with other operators; the
plan says so). It is begun after the plan and the confirmation, before the
first move: if it cannot be written, the run refuses with nothing moved
(--no-audit runs without one). A dry run writes none. pushdlq history reads
the records.

The replay guard: a redriven message is a new message, so a notification
that keeps failing can be replayed again and again. Before the plan, the
recorded replay runs are counted per notification; a notification replayed
--max-replays times already (default 3) is not sent again: it stays in the
DLQ, released or parked as --ineligible says, and is counted apart as
held_back, named in the summary with its count. If the records cannot be
read, the run refuses unless --max-replays 0 (no limit).`,
		Example: `  pushdlq replay --dlq push-dlq --queue-base-url https://sqs.us-east-1.amazonaws.com/123456789012/push- \
      --window 2025-11-14T08:30:00Z/2025-11-14T09:00:00Z --codes 1004,2003 --dry-run
  pushdlq replay --dlq push-dlq --queue-base-url URL --since 6h --codes 1004 --dry-run
  env $(cat push-dlq.env) pushdlq replay --from-env --yes --rate 50
  pushdlq replay --from-env --resume ~/.local/state/deadletter/replay-20251114T091500Z.ndjson --yes
  pushdlq replay --from-file edited.ndjson --queue-base-url URL --window START/END --codes '*' --yes`,
		Args: cmdutil.UsageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.validate(cmd); err != nil {
				return err
			}
			return run(cmd.Context(), opts)
		},
	}
	addQueueFlags(cmd, &opts.Queue, false)
	fl := cmd.Flags()
	fl.StringVar(&opts.BaseURL, "queue-base-url", "", "prefix of the priority queues; target = ${base}P${priority}")
	fl.StringVar(&opts.Window, "window", "", "inclusive createdAt window START/END (ISO-8601 or epoch ms)")
	fl.StringVar(&opts.Since, "since", "", "the createdAt window of the last 30m, 6h, 2d or 1w (units s, m, h, d, w): now minus it to now; not with --window")
	fl.StringVar(&opts.Codes, "codes", "", "error codes to replay, comma-separated, or '*' for all")
	fl.BoolVar(&opts.FromEnv, "from-env", false, "read the push-dlq processor's environment variables")
	fl.StringVar(&opts.FromFile, "from-file", "", "replay the messages of an export file instead of the DLQ")
	fl.BoolVar(&opts.DryRun, "dry-run", false, "print the plan, release every message and stop")
	fl.BoolVarP(&opts.Yes, "yes", "y", false, "do not ask for confirmation")
	fl.StringVar(&opts.Ineligible, "ineligible", "release", "what to do with ineligible messages: release (untouched) or park (delay 900 s, as the processor)")
	fl.IntVar(&opts.Max, "max", 0, "replay at most this many eligible messages (0: all)")
	fl.Float64Var(&opts.Rate, "rate", 0, "send at most this many messages per second, 0.01 to 100000 (0: no limit)")
	fl.IntVar(&opts.Concurrency, "concurrency", 16, "batches in flight at once")
	fl.StringVar(&opts.Journal, "journal", "", "write-ahead journal file (default: a new file under $XDG_STATE_HOME/deadletter)")
	fl.StringVar(&opts.Resume, "resume", "", "continue the run this journal records (and append to it)")
	fl.BoolVar(&opts.AllowWideWindow, "allow-wide-window", false, "allow --codes '*' with a window over 24 hours")
	fl.IntVar(&opts.MaxReplays, "max-replays", 3, "hold back the notifications the audit shows replayed this many times already (0: no limit)")
	cmdutil.AddAuditFlags(cmd, &opts.Audit, true)
	fl.DurationVar(&opts.WaitHeld, "wait-held", 15*time.Minute, "with --resume: how long to wait for messages the interrupted run still holds invisible (longer: exit 1, saying until when)")
	_ = cmd.RegisterFlagCompletionFunc("ineligible", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{"release", "park"}, cobra.ShellCompDirectiveNoFileComp
	})
	opts.Output = cmdutil.AddOutputFlag(cmd, "table", "json", "ndjson")
	return cmd
}

// validate resolves the configuration (flags over --from-env) and applies
// every guardrail before anything is read from SQS.
func (o *ReplayOptions) validate(cmd *cobra.Command) error {
	o.given = cmdutil.GivenFlags(cmd, "journal", "resume", "dry-run", "wait-held", "since")
	if err := o.Output.Validate(); err != nil {
		return err
	}
	if err := validateQueue(o.Queue); err != nil {
		return err
	}
	if o.FromEnv {
		c, err := pushpolicy.LoadConfig(o.Factory.Getenv)
		if err != nil {
			return cmdutil.UsageErrorf("--from-env: %v", err)
		}
		if !cmd.Flags().Changed("dlq") && o.FromFile == "" {
			o.Queue.DLQ = c.DLQURL
		}
		if !cmd.Flags().Changed("queue-base-url") {
			o.BaseURL = c.BaseURL
		}
		o.Policy = c.Policy
	}
	switch {
	case o.FromFile != "" && o.Queue.DLQ != "" && cmd.Flags().Changed("dlq"):
		return cmdutil.UsageErrorf("--from-file and --dlq are mutually exclusive")
	case o.FromFile == "" && o.Queue.DLQ == "":
		return cmdutil.UsageErrorf("--dlq (or --from-env, or --from-file) is required")
	case o.BaseURL == "":
		return cmdutil.UsageErrorf("--queue-base-url (or --from-env) is required")
	}
	if err := o.resolveSince(); err != nil {
		return err
	}
	pf := policyFlags{Window: o.Window, Codes: o.Codes, AllowWideWindow: o.AllowWideWindow, Or: "--from-env", OrGiven: o.FromEnv}
	if err := pf.apply(o.Factory, &o.Policy); err != nil {
		return err
	}
	if o.Ineligible != "release" && o.Ineligible != "park" {
		return cmdutil.UsageErrorf("--ineligible %q: want release or park", o.Ineligible)
	}
	if o.Ineligible == "park" && o.FromFile != "" {
		return cmdutil.UsageErrorf("--ineligible park needs the DLQ; with --from-file ineligible messages are skipped")
	}
	if o.WaitHeld < 0 {
		return cmdutil.UsageErrorf("--wait-held %s: want 0 or more", o.WaitHeld)
	}
	if o.MaxReplays < 0 {
		return cmdutil.UsageErrorf("--max-replays %d: want 0 (no limit) or more", o.MaxReplays)
	}
	o.started = cmdutil.AuditStarted(cmd, nil, o.Audit, o.Factory.Getenv)
	if o.Max < 0 || o.Concurrency < 1 {
		return cmdutil.UsageErrorf("--max wants 0 or more, --concurrency 1 or more")
	}
	if o.Rate != 0 && !(o.Rate >= minRate && o.Rate <= maxRate) { // NaN fails both
		return cmdutil.UsageErrorf("--rate %v: want a number of messages per second from %g to %g, or 0 for no limit", o.Rate, minRate, maxRate)
	}
	if o.Journal != "" && o.Resume == "" {
		// Checked now, not after a scan that holds every message.
		dir := filepath.Dir(o.Journal)
		if st, err := os.Stat(dir); err != nil {
			return cmdutil.UsageErrorf("--journal %s: its directory: %v", o.Journal, err)
		} else if !st.IsDir() {
			return cmdutil.UsageErrorf("--journal %s: %s is not a directory", o.Journal, dir)
		}
		if st, err := os.Stat(o.Journal); err == nil && st.IsDir() {
			return cmdutil.UsageErrorf("--journal %s is a directory; name a file", o.Journal)
		}
	}
	if o.Resume != "" {
		if _, err := os.Stat(o.Resume); err != nil {
			return cmdutil.UsageErrorf("--resume: %v", err)
		}
		if o.Journal != "" && o.Journal != o.Resume {
			return cmdutil.UsageErrorf("--resume appends to its journal; do not pass a different --journal")
		}
	}
	if !o.DryRun {
		return cmdutil.RequireYes(o.Factory.IO, o.Yes, "replay")
	}
	return nil
}

// resolveSince makes --since the --window it stands for: from now minus
// the span to now, to the millisecond. A resume command printed later
// names that window, never the span, so that it selects what this run did.
func (o *ReplayOptions) resolveSince() error {
	if o.Since == "" {
		return nil
	}
	if o.Window != "" {
		return cmdutil.SinceConflict("--window")
	}
	w, err := cmdutil.ResolveSince(o.Since, o.Factory.Now())
	if err != nil {
		return err
	}
	o.since, o.Window = &w, w.Window()
	o.given = append(o.given, "--window", o.Window)
	return nil
}

// The bounds of --rate (messages per second): below the minimum the
// limiter's spacing stops making sense, above the maximum it is no limit.
const (
	minRate = 0.01
	maxRate = 100000.0
)

// MessageResult is one -o ndjson line per message.
type MessageResult struct {
	Type      string  `json:"type"`
	MessageID string  `json:"message_id"`
	Outcome   string  `json:"outcome"`
	ErrorCode *int    `json:"error_code"`
	Priority  *int    `json:"priority"`
	CreatedAt *string `json:"created_at"`
	// CreatedAtForm says how the body wrote createdAt: epoch_ms,
	// numeric_string or iso8601.
	CreatedAtForm *string `json:"created_at_form"`
	Target        *string `json:"target"`
	NewID         *string `json:"new_message_id"`
	Reason        *string `json:"reason"`
	Error         *string `json:"error"`
}

// replayGCPercent is the replay's GOGC unless the environment sets one,
// and replayMemoryLimit its soft memory limit (GOMEMLIMIT) with it.
const (
	replayGCPercent   = 400
	replayMemoryLimit = 48 << 20
)

func runReplay(ctx context.Context, opts *ReplayOptions) error {
	// A closed stdout stops the run like an interrupt: what is in flight
	// is finished, the rest released, the journal completed.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if _, set := os.LookupEnv("GOGC"); !set {
		// The live heap is small (the seen-set, one state byte per
		// message) and the garbage short-lived (each call's request and
		// reply): collecting at five times the default target cuts the
		// collector's CPU, which the two shared cores would otherwise
		// take from the SQS server, for a few MiB more resident memory.
		defer debug.SetGCPercent(debug.SetGCPercent(replayGCPercent))
		if _, set := os.LookupEnv("GOMEMLIMIT"); !set {
			// A soft ceiling: near it the collector runs as often as the
			// default would, so memory stays flat over a long run.
			defer debug.SetMemoryLimit(debug.SetMemoryLimit(replayMemoryLimit))
		}
	}
	f := opts.Factory
	w := f.IO.ErrOut
	out := newStdoutGuard(f.IO.Out, cancel)
	var stream *output.JSONStream
	if opts.Output.Value == "ndjson" {
		stream = output.NewJSONStream(out, true)
	}
	if err := opts.readGuard(ctx); err != nil {
		return err
	}
	var plan *pushreplay.Plan
	var rec *audit.Recorder
	run := &pushreplay.Run{Options: opts.Options, Out: stderrOut(f), SQS: f.SQS, StateDir: f.StateDir, Now: f.Now,
		Plan: func(p *pushreplay.Plan) { plan = p; printPlan(w, opts, p) },
		Confirm: func(p *pushreplay.Plan) (bool, error) {
			ok, err := cmdutil.Confirm(f.IO, fmt.Sprintf("Replay %s?", output.Plural(p.Eligible, "message")), "yes")
			switch {
			case err == nil && ok:
			case p.Round > 1:
				fmt.Fprintln(w, declinedRoundLine(p))
			default:
				fmt.Fprintln(w, "nothing sent, nothing changed; every message is released")
				if err == nil {
					err = cmdutil.ErrNotConfirmed
				}
			}
			return ok, err
		}}
	if !opts.DryRun && !opts.Audit.NoAudit {
		run.BeforeMove = func() (err error) {
			rec, err = f.beginAudit(ctx, opts.audit, opts.auditStarted(plan))
			return err
		}
	}
	if stream != nil || !opts.DryRun {
		run.OnMessage = func(m pushreplay.Fate) {
			if stream != nil {
				stream.Write(messageLine(m))
			}
			if rec != nil {
				rec.Add(replayItem(m, opts.Replayed))
			}
		}
	}
	if opts.Resume == "" && opts.Journal == "" && opts.FromFile == "" {
		// After a kill nothing was printed: the same command again is
		// refused, and names the resume instead (a dry run only says so).
		if uerr := unfinishedReplay(opts, opts.Queue.DLQ); uerr != nil && !opts.DryRun {
			return uerr
		} else if uerr != nil {
			fmt.Fprintf(w, "note: %v\n", uerr)
		}
	}
	res, err := run.Replay(ctx)
	var unwritable *audit.UnwritableError
	if errors.As(err, &unwritable) {
		return unwritableError(unwritable)
	}
	err = replayOutcome(opts, out, stream, res, err)
	if res != nil {
		finishAudit(ctx, w, rec, replayCounts(res.Summary), err)
	} else {
		finishAudit(ctx, w, rec, nil, err)
	}
	return err
}

// replayOutcome renders what a run came to (what it left undone on stderr,
// the summary on stdout, then what stopped it) and makes it the exit code.
func replayOutcome(opts *ReplayOptions, out *stdoutGuard, stream *output.JSONStream, res *pushreplay.RunResult, err error) error {
	var held *pushreplay.HeldTooLongError
	if errors.As(err, &held) {
		err = fmt.Errorf("%w; that is:\n  %s", err, resumeCommand(opts, opts.Resume, held.WaitHeld()))
	}
	if res == nil {
		return replayExit(err)
	}
	w := opts.Factory.IO.ErrOut
	printUnfinished(w, opts, res.Summary)
	if res.NoSummary {
		return replayExit(err)
	}
	if err == nil && opts.DryRun && res.Plan != nil {
		if u := uncheckedTargets(res.Plan); u != nil {
			// The plan could not be checked (no credentials, an endpoint
			// that cannot be reached): the command failed, so no summary.
			return u.dryRunError()
		}
		if res.Plan.Missing > 0 {
			err = cmdutil.PartialError // a dry run found a target queue missing
		}
	}
	err = replayExit(err)
	if werr := writeReplaySummary(out, stream, opts.Output.Value, res.Summary); werr != nil && err == nil && !out.Closed() {
		err = werr
	}
	if r := res.DeleteRefused; r != nil {
		verb := map[bool]string{true: "is", false: "are"}[r.Count == 1]
		fmt.Fprintf(w, "pushdlq: the DLQ refused to delete: %s\n"+
			"stopped at once, nothing more is sent: %s %s now in both the target queue and the DLQ.\n"+
			"Do not start a fresh replay (it would send them again). Once this identity may delete from the DLQ (sqs:DeleteMessage),\n"+
			"run the same command with --resume %s: it deletes them from the DLQ without re-sending them, and replays the rest.\n",
			output.Escape(cmdutil.ErrorLine(r.Err)), output.Plural(r.Count, "message"), verb, r.Journal)
	}
	if limit := res.InFlightLimit; limit != nil {
		fmt.Fprintln(w, inFlightLimitNote(limit, res.DLQ.Visible+res.DLQ.InFlight,
			"the rest were not read; run again for them (what this run sent or parked is no longer in flight)"))
		if err == nil {
			err = cmdutil.PartialError
		}
	}
	s := res.Summary
	switch {
	case out.Closed():
		what := fmt.Sprintf("%s sent, %s released", output.Plural(s.Sent, "message"), output.Plural(s.Released, "message"))
		if s.Parked > 0 {
			what = fmt.Sprintf("%s sent, %d parked, %s released", output.Plural(s.Sent, "message"), s.Parked, output.Plural(s.Released, "message"))
		}
		if s.Journal != nil {
			what += ", journal complete: " + *s.Journal
		}
		err = stoppedError(what)
	case err == nil && res.Partial():
		err = cmdutil.PartialError
	case errors.Is(err, context.Canceled):
		printInterrupted(w, opts, s)
	}
	return err
}

// resumeCommand is the command that resumes the run of journal: this
// invocation's flags with --resume, quoted for the shell, so that it runs
// as printed (a longer --wait-held when waitHeld is not 0).
func resumeCommand(opts *ReplayOptions, journal string, waitHeld time.Duration) string {
	words := append([]string{"pushdlq", "replay"}, opts.given...)
	if waitHeld > 0 {
		words = append(words, "--wait-held", waitHeld.String())
	} else if opts.WaitHeld != 15*time.Minute {
		words = append(words, "--wait-held", opts.WaitHeld.String())
	}
	return shellword.Join(append(words, "--resume", journal)...)
}

// printInterrupted says what an interrupted run (Ctrl-C, SIGTERM) left:
// nothing changed, when it stopped before its journal was opened; else the
// command that resumes it.
func printInterrupted(w io.Writer, opts *ReplayOptions, s pushreplay.Summary) {
	if s.Journal == nil {
		fmt.Fprintln(w, "interrupted before anything was sent: nothing changed; every message is released")
		return
	}
	fmt.Fprintf(w, "interrupted: %s sent, %s released; the journal is %s.\n"+
		"Resume the run (what the journal shows as sent is deleted from the DLQ, not sent again) with:\n  %s\n",
		output.Plural(s.Sent, "message"), output.Plural(s.Released, "message"), *s.Journal, resumeCommand(opts, *s.Journal, 0))
}

// stderrOut is where the replay workflow and a DLQ session speak: stderr,
// with progress lines on a terminal.
func stderrOut(f *Factory) dlqsession.Out {
	return dlqsession.Out{
		Logf: func(format string, args ...any) { fmt.Fprintf(f.IO.ErrOut, format+"\n", args...) },
		NewProgress: func() dlqsession.Progress {
			return cmdutil.NewProgress(f.IO.ErrOut, f.IO.ShowProgress())
		},
	}
}

// replayExit gives the workflow's errors their exit codes: a refusal of
// the inputs is a usage error (exit 2); a delete the DLQ refused stopped
// the run (exit 4), its note printed after the summary.
func replayExit(err error) error {
	var refused *pushreplay.DeleteRefusedError
	if errors.As(err, &refused) {
		return &cmdutil.ExitError{Code: cmdutil.ExitAuth}
	}
	return usageExit(err)
}

// usageExit makes a *dlqsession.UsageError a usage error (exit 2).
func usageExit(err error) error {
	var usage *dlqsession.UsageError
	if errors.As(err, &usage) {
		return &cmdutil.ExitError{Code: cmdutil.ExitUsage, Err: err}
	}
	return err
}

func printPlan(w io.Writer, opts *ReplayOptions, p *pushreplay.Plan) {
	policy := opts.Policy
	fmt.Fprintf(w, "\nPlan for %s\n", p.Source)
	if p.Round > 1 {
		fmt.Fprintf(w, "  round    %d, read on past SQS's in-flight limit: what this round read (the earlier rounds sent %d and parked %d)\n",
			p.Round, p.EarlierSent, p.EarlierParked)
	}
	// Two lines, so that the plan fits 80 columns.
	fmt.Fprintf(w, "  window   %s … %s\n           inclusive, on createdAt (epoch ms %d … %d)\n", isoMs(policy.Start), isoMs(policy.End), policy.Start, policy.End)
	if opts.since != nil {
		fmt.Fprintf(w, "           %s (now minus %s to now)\n", opts.since, opts.since.Given)
	}
	if opts.Window != "" {
		if a, b, _ := strings.Cut(opts.Window, "/"); pushpolicy.IsDateOnly(a) || pushpolicy.IsDateOnly(b) {
			fmt.Fprintf(w, "           a date alone means midnight UTC at the start of that day: the window ends at %s\n", isoMs(policy.End))
		}
	}

	fmt.Fprintf(w, "  codes    %s\n", policy.CodesString())
	fmt.Fprintf(w, "  scanned  %d\n", p.Scanned)
	fmt.Fprintf(w, "  eligible %d\n", p.Eligible)
	keys := make([]pushreplay.TargetKey, 0, len(p.ByTarget))
	for k := range p.ByTarget {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].Code != keys[j].Code {
			return keys[i].Code < keys[j].Code
		}
		return keys[i].Priority < keys[j].Priority
	})
	unchecked := uncheckedTargets(p)
	for _, k := range keys {
		code, name := codeLabel(k.Code)
		note := ""
		if c, bad := p.Targets[k.Target]; bad && c.Missing {
			note = "  MISSING: " + pushreplay.ErrorReason(c.Err)
		} else if reason, ok := unchecked.reason(k.Target); ok {
			note = "  (not checked)"
			if unchecked.shared == "" {
				note = "  (not checked: " + reason + ")"
			}
		}
		fmt.Fprintf(w, "    %6d  code %s %-24s priority %-3d -> %s%s\n", p.ByTarget[k], code, name, k.Priority, sqsmove.Name(k.Target), note)
	}
	if unchecked != nil && unchecked.shared != "" && !opts.DryRun {
		// A dry run ends with this line as its error.
		fmt.Fprintf(w, "  not checked: %s\n", unchecked.shared)
	}
	action := "released untouched"
	if opts.Ineligible == "park" {
		action = "parked in the DLQ with DelaySeconds 900"
	}
	ineligible := maps.Clone(p.Ineligible)
	delete(ineligible, pushpolicy.ReasonHeldBack)
	fmt.Fprintf(w, "  ineligible %d (%s)\n", p.IneligibleTotal()-p.Ineligible[pushpolicy.ReasonHeldBack], action)
	for _, c := range byCount(ineligible, reasonLabel) {
		fmt.Fprintf(w, "    %6d  %s\n", c.Count, c.Name)
	}
	if p.AlreadySent > 0 {
		fmt.Fprintf(w, "  already sent by the resumed run: %d (deleted from the DLQ, not sent again)\n", p.AlreadySent)
	}
	if n := p.ResumedUncertain; n > 0 {
		fmt.Fprintf(w, "  uncertain in the resumed run: %d (sent, no reply known; sent again if still here: possible duplicates, listed in the summary)\n", n)
	}
	if n := p.InFlightElsewhere; n > 0 {
		fmt.Fprintf(w, "  in flight %d: another consumer or an interrupted run holds them; they are not in this plan\n", n)
	}
	if n := p.Delayed; n > 0 {
		fmt.Fprintf(w, "  delayed %d: delayed in the DLQ (DelaySeconds), they cannot be read yet; they are not in this plan\n", n)
	}
	if n := p.StillHeld; n > 0 {
		fmt.Fprintf(w, "  still held %d: the interrupted run held them and they are not back in the DLQ; they are not in this plan\n", n)
	}
	if n := p.Ineligible[pushpolicy.ReasonHeldBack]; n > 0 || opts.MaxReplays > 0 {
		printHeldBack(w, opts, p, n)
	}
	switch {
	case opts.DryRun:
	case opts.Audit.NoAudit:
		fmt.Fprintln(w, "  audit: none (--no-audit)")
	case opts.audit != nil:
		fmt.Fprintf(w, "  %s\n", opts.audit.planLine())
	}
	if opts.Rate > 0 && p.Eligible > 0 {
		fmt.Fprintf(w, "  rate     %g msg/s (about %s)\n", opts.Rate, time.Duration(float64(p.Eligible)/opts.Rate*float64(time.Second)).Round(time.Second))
	}
	switch {
	case opts.DryRun:
		fmt.Fprintln(w, "dry run: nothing sent; every message is released")
		if p.Missing > 0 {
			fmt.Fprintf(w, "dry run: %s of the plan %s not exist; a replay would fail their messages\n",
				output.Plural(p.Missing, "target queue"), map[bool]string{true: "does", false: "do"}[p.Missing == 1])
		}
	case p.Nothing:
		if n := p.InFlightElsewhere + p.StillHeld; n > 0 {
			verb := map[bool]string{true: "is", false: "are"}[n == 1]
			fmt.Fprintf(w, "nothing visible to replay, but %s %s in flight: another consumer or an interrupted run holds them; run again once they are visible\n", output.Plural(n, "message"), verb)
		} else if n := p.Delayed; n > 0 {
			verb := map[bool]string{true: "is", false: "are"}[n == 1]
			fmt.Fprintf(w, "nothing visible to replay, but %s %s delayed in the DLQ (DelaySeconds): they cannot be read yet; run again once they are visible\n", output.Plural(n, "message"), verb)
		} else {
			fmt.Fprintln(w, "nothing to replay")
		}
	}
}

// messageLine is the -o ndjson line of a message's fate.
func messageLine(m pushreplay.Fate) MessageResult {
	line := MessageResult{Type: "message", MessageID: m.MessageID, Outcome: string(m.Outcome)}
	c := m.Command
	if c.HasErrorCode {
		line.ErrorCode = &c.ErrorCode
	}
	if c.HasPriority {
		line.Priority = &c.Priority
	}
	if c.HasCreatedAt {
		s, form := isoMs(c.CreatedAt), string(c.CreatedAtForm)
		line.CreatedAt, line.CreatedAtForm = &s, &form
	}
	if m.Target != "" {
		line.Target = &m.Target
	}
	if m.NewID != "" {
		line.NewID = &m.NewID
	}
	if m.Outcome == pushreplay.OutcomeReleased {
		reason := string(m.Reason)
		line.Reason = &reason
	}
	if m.Err != nil {
		e := m.Err.Error()
		line.Error = &e
	}
	if m.DeleteFailed != nil {
		e := "sent, but not deleted from the DLQ: " + m.DeleteFailed.Error()
		line.Error = &e
	}
	return line
}

// printUnfinished says on stderr what the replay left undone: the failed
// messages by target and reason, the ones whose hold was lost, and the
// possible duplicates.
func printUnfinished(w io.Writer, opts *ReplayOptions, s pushreplay.Summary) {
	if len(s.Failures) > 0 {
		// The rows count failed parks too (not_parked, target the DLQ).
		n := 0
		for _, r := range s.Failures {
			n += r.Count
		}
		fmt.Fprintf(w, "failed %d; they stay in the DLQ:\n", n)
		for _, r := range s.Failures {
			fmt.Fprintf(w, "  %s: %s failed: %s\n", sqsmove.Name(r.Target), output.Plural(r.Count, "message"), r.Reason)
		}
	}
	if ids := s.HoldLostIDs; len(ids) > 0 {
		fmt.Fprintf(w, "hold lost %d: the run no longer held them when their turn came (paused past --visibility-timeout %s, or another consumer received them); not sent, not deleted, they are in the DLQ again or another consumer has them:\n",
			len(ids), opts.Queue.Visibility)
		printIDs(w, ids)
	}
	if n := s.PossibleDuplicates; n > 0 {
		fmt.Fprintf(w, "possible duplicates %d: sent with no reply known, or sent while the hold on them was lost, so they may be in their target twice (or in the target and the DLQ):\n", n)
		printIDs(w, s.PossibleDuplicateIDs)
	}
}

// printIDs lists up to 20 message ids, one a line.
func printIDs(w io.Writer, ids []string) {
	for _, id := range ids[:min(len(ids), 20)] {
		fmt.Fprintf(w, "  %s\n", id)
	}
	if len(ids) > 20 {
		fmt.Fprintf(w, "  … and %d more, all in the summary and the journal\n", len(ids)-20)
	}
}

// writeReplaySummary writes the summary record on stdout: the last line
// of -o ndjson, one JSON object, or a table.
func writeReplaySummary(out io.Writer, stream *output.JSONStream, format string, s pushreplay.Summary) error {
	switch format {
	case "ndjson":
		if err := stream.Write(s); err != nil {
			return err
		}
		return stream.Close()
	case "json":
		return output.WriteJSON(out, s)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "scanned             %d\n", s.Scanned)
	fmt.Fprintf(&b, "eligible            %d\n", s.Eligible)
	fmt.Fprintf(&b, "sent                %d\n", s.Sent)
	fmt.Fprintf(&b, "parked              %d\n", s.Parked)
	fmt.Fprintf(&b, "released            %d\n", s.Released)
	fmt.Fprintf(&b, "failed              %d\n", s.Failed)
	fmt.Fprintf(&b, "delete failed       %d\n", s.DeleteFailed)
	fmt.Fprintf(&b, "skipped duplicates  %d\n", s.SkippedDuplicates)
	if s.HeldBack > 0 {
		fmt.Fprintf(&b, "held back           %d (replayed --max-replays times already; they stay in the DLQ)\n", s.HeldBack)
		for _, h := range s.HeldBackNotifications {
			fmt.Fprintf(&b, "  %s  replayed %s already, %s held back\n", output.Escape(h.NotificationID), output.Plural(h.Replays, "time"), output.Plural(h.Messages, "message"))
		}
	}
	// Counts that are shown only when not zero.
	for _, c := range []struct {
		label string
		n     int
	}{
		{"uncertain", s.Uncertain}, {"possible duplicates", s.PossibleDuplicates}, {"in flight elsewhere", s.InFlightElsewhere},
		{"hold lost", s.HoldLost}, {"not parked", s.NotParked}, {"delayed", s.Delayed}, {"still held", s.StillHeld}, {"abandoned", s.Abandoned},
		{"release failed", s.ReleaseFailed},
	} {
		if c.n > 0 {
			fmt.Fprintf(&b, "%-19s %d\n", c.label, c.n)
		}
	}
	if s.Journal != nil {
		fmt.Fprintf(&b, "journal             %s\n", *s.Journal)
	}
	if s.DryRun {
		b.WriteString("dry run             nothing was sent\n")
	}
	_, err := fmt.Fprint(out, b.String())
	return err
}

// targetsUnchecked is why target queues of a plan could not be checked
// (whether they exist is not known): an endpoint that cannot be reached,
// no credentials, access denied. Each reason is one line
// (awsconfig.Explain, through cmdutil.ErrorLine), without the SDK's
// operation chain or the queue (its row names it); shared is the reason
// when every such queue has the same one, as an endpoint or credentials
// failure gives, so that it is said once.
type targetsUnchecked struct {
	queues  []string          // sorted
	reasons map[string]string // by queue
	shared  string
	auth    bool // credentials or permission: exit 4
}

// uncheckedTargets is nil when every target queue of the plan was
// checked (found, or missing).
func uncheckedTargets(p *pushreplay.Plan) *targetsUnchecked {
	u := &targetsUnchecked{reasons: map[string]string{}}
	note := func(queue string, err error) {
		u.queues = append(u.queues, queue)
		u.reasons[queue] = checkReason(err)
		u.auth = u.auth || cmdutil.IsAuthError(err)
	}
	if p.Unchecked != nil { // no client: none was checked
		for k := range p.ByTarget {
			if _, seen := u.reasons[k.Target]; !seen {
				note(k.Target, p.Unchecked)
			}
		}
	}
	for queue, c := range p.Targets {
		if _, seen := u.reasons[queue]; !seen && !c.Missing && c.Err != nil {
			note(queue, c.Err)
		}
	}
	if len(u.queues) == 0 {
		return nil
	}
	sort.Strings(u.queues)
	u.shared = u.reasons[u.queues[0]]
	for _, q := range u.queues {
		if u.reasons[q] != u.shared {
			u.shared = ""
		}
	}
	return u
}

// reason is why queue was not checked; ok is false when it was.
func (u *targetsUnchecked) reason(queue string) (string, bool) {
	if u == nil {
		return "", false
	}
	r, ok := u.reasons[queue]
	return r, ok
}

// dryRunError is a dry run's failure to check its plan: one line, exit 4
// for credentials or permission, else 1.
func (u *targetsUnchecked) dryRunError() error {
	code := cmdutil.ExitFailure
	if u.auth {
		code = cmdutil.ExitAuth
	}
	names := make([]string, len(u.queues))
	for i, q := range u.queues {
		names[i] = sqsmove.Name(q)
	}
	what := "the target queue " + names[0]
	if len(names) > 1 {
		what = "the target queues " + strings.Join(names, ", ")
	}
	line := fmt.Sprintf("dry run: could not check %s: %s", what, u.shared)
	if u.shared == "" {
		line = fmt.Sprintf("dry run: could not check %s (the plan says why for each)", what)
	}
	return &cmdutil.ExitError{Code: code, Err: errors.New(line)}
}

// checkReason is an error of a target queue's check in one line: the
// common AWS failures explained (cmdutil.ErrorLine), less what was wrapped
// around the SDK's error (the queue, which the plan's row names).
func checkReason(err error) string {
	line := cmdutil.ErrorLine(err)
	if line == err.Error() {
		return pushreplay.ErrorReason(err) // not a failure ErrorLine knows
	}
	var oe *smithy.OperationError
	if errors.As(err, &oe) {
		if prefix, ok := strings.CutSuffix(err.Error(), oe.Error()); ok {
			line = strings.TrimPrefix(line, prefix)
		}
	}
	return line
}

// declinedRoundLine is what a declined later round of a park replay says:
// that round's messages are released, the earlier rounds' moves stay.
func declinedRoundLine(p *pushreplay.Plan) string {
	return fmt.Sprintf("nothing more sent: the %s round %d read %s released; what the earlier rounds sent or parked stays so",
		output.Plural(p.Scanned, "message"), p.Round, output.Agree(p.Scanned, "is", "are"))
}
