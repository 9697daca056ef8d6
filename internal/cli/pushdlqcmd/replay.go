package pushdlqcmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/deadletter/deadletter/internal/audit"
	"github.com/deadletter/deadletter/internal/cli/cmdutil"
	"github.com/deadletter/deadletter/internal/cli/output"
	"github.com/deadletter/deadletter/internal/gctune"
	"github.com/deadletter/deadletter/internal/pushpolicy"
	"github.com/deadletter/deadletter/internal/shellword"
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
		Use:     "replay (--dlq URL|NAME | --from-file FILE) --queue-base-url URL (--window START/END | --since SPAN) --codes LIST",
		Short:   "Replay a time-boxed, error-code-filtered slice of the DLQ to the priority queues",
		Long:    replayLong,
		Example: replayExample,
		Args:    cmdutil.UsageArgs(cobra.NoArgs),
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
	if err := o.validateJournal(); err != nil {
		return err
	}
	if !o.DryRun {
		return cmdutil.RequireYes(o.Factory.IO, o.Yes, "replay")
	}
	return nil
}

// validateJournal checks --journal and --resume: a new journal's
// directory is checked now, not after a scan that holds every message.
func (o *ReplayOptions) validateJournal() error {
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
	// The live heap is small (the seen-set, one state byte per message)
	// and the garbage short-lived (each call's request and reply):
	// collecting at five times the default target cuts the collector's
	// CPU, which the two shared cores would otherwise take from the SQS
	// server, for a few MiB more resident memory. A soft ceiling beside it:
	// near it the collector runs as often as the default would, so memory
	// stays flat over a long run.
	defer gctune.Tune(os.Getenv, gctune.Settings{GCPercent: replayGCPercent, MemoryLimit: replayMemoryLimit, LimitWithGC: true})()
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
