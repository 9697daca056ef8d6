package pushdlqcmd

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/deadletter/deadletter/internal/cli/cmdutil"
	"github.com/deadletter/deadletter/internal/cli/output"
	"github.com/deadletter/deadletter/internal/pushpolicy"
	"github.com/deadletter/deadletter/internal/sqsmove"
	"github.com/deadletter/deadletter/internal/workflow/pushreplay"
)

// ReplayOptions are pushdlq replay's inputs.
type ReplayOptions struct {
	Factory         *Factory
	Queue           queueFlags
	BaseURL         string
	Window          string
	Codes           string
	FromEnv         bool
	FromFile        string
	DryRun          bool
	Yes             bool
	Ineligible      string
	Max             int
	Rate            float64
	Concurrency     int
	Journal         string
	Resume          string
	AllowWideWindow bool
	WaitHeld        time.Duration
	Output          *cmdutil.Output

	policy pushpolicy.Policy
}

// NewCmdReplay builds `pushdlq replay`.
func NewCmdReplay(f *Factory, runF func(context.Context, *ReplayOptions) error) *cobra.Command {
	opts := &ReplayOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "replay (--dlq URL|NAME | --from-file FILE) --queue-base-url URL --window START/END --codes LIST",
		Short: "Replay a time-boxed, error-code-filtered slice of the DLQ to the priority queues",
		Long: `Replay the DLQ messages whose errorCode is selected (--codes 1004,2003, or '*'
alone) and whose createdAt lies inside the inclusive window (--window
START/END, each ISO-8601 or epoch milliseconds; a time without a zone is UTC,
and a date alone is midnight UTC at the start of that day, so
2025-11-14/2025-11-15 covers the 14th and ends at 2025-11-15T00:00:00.000Z)
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
     queue is missing); otherwise confirm, or pass --yes when not on a
     terminal;
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
After the scan, the DLQ's messages that are neither visible nor held by
this run are in flight elsewhere (another consumer, an interrupted run, a
receive whose reply was lost), and delayed ones cannot be read yet: the
plan and the summary count both (in_flight_elsewhere, delayed), and the
run exits 3 whenever either is not zero, never "nothing to replay" and 0.`,
		Example: `  pushdlq replay --dlq push-dlq --queue-base-url https://sqs.us-east-1.amazonaws.com/123456789012/push- \
      --window 2025-11-14T08:30:00Z/2025-11-14T09:00:00Z --codes 1004,2003 --dry-run
  env $(cat push-dlq.env) pushdlq replay --from-env --yes --rate 50
  pushdlq replay --from-env --resume ~/.local/state/deadletter/replay-20251114T091500Z.ndjson --yes
  pushdlq replay --from-file edited.ndjson --queue-base-url URL --window START/END --codes '*' --yes`,
		Args: cmdutil.UsageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.validate(cmd); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runReplay(cmd.Context(), opts)
		},
	}
	opts.Queue.register(cmd, false)
	fl := cmd.Flags()
	fl.StringVar(&opts.BaseURL, "queue-base-url", "", "prefix of the priority queues; target = ${base}P${priority}")
	fl.StringVar(&opts.Window, "window", "", "inclusive createdAt window START/END (ISO-8601 or epoch ms)")
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
	if err := o.Output.Validate(); err != nil {
		return err
	}
	if err := o.Queue.validate(); err != nil {
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
		o.policy = c.Policy
	}
	switch {
	case o.FromFile != "" && o.Queue.DLQ != "" && cmd.Flags().Changed("dlq"):
		return cmdutil.UsageErrorf("--from-file and --dlq are mutually exclusive")
	case o.FromFile == "" && o.Queue.DLQ == "":
		return cmdutil.UsageErrorf("--dlq (or --from-env, or --from-file) is required")
	case o.BaseURL == "":
		return cmdutil.UsageErrorf("--queue-base-url (or --from-env) is required")
	}
	if err := policyFlags(o.Factory, &o.policy, o.Window, o.Codes, o.AllowWideWindow, o.FromEnv, "--from-env"); err != nil {
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

// The bounds of --rate (messages per second): below the minimum the
// limiter's spacing stops making sense, above the maximum it is no limit.
const (
	minRate = 0.01
	maxRate = 100000.0
)

// ReplaySummary is the summary record of pushdlq replay.
type ReplaySummary struct {
	Type              string `json:"type"`
	DryRun            bool   `json:"dry_run"`
	Source            string `json:"source"`
	WindowStart       string `json:"window_start"`
	WindowEnd         string `json:"window_end"`
	Codes             string `json:"codes"`
	Scanned           int    `json:"scanned"`
	Eligible          int    `json:"eligible"`
	Ineligible        int    `json:"ineligible"`
	Sent              int    `json:"sent"`
	Parked            int    `json:"parked"`
	Released          int    `json:"released"`
	Failed            int    `json:"failed"`
	DeleteFailed      int    `json:"delete_failed"`
	SkippedDuplicates int    `json:"skipped_duplicates"`
	Abandoned         int    `json:"abandoned"`
	ReleaseFailed     int    `json:"release_failed"`
	// Uncertain counts this run's sends that got no reply: each of those
	// messages is still in the DLQ and may be in its target too.
	Uncertain int `json:"uncertain"`
	// PossibleDuplicates lists every message this run may have delivered
	// twice: its uncertain sends, and the messages an earlier run's send of
	// them left uncertain (sent again by this run or not).
	PossibleDuplicates   int      `json:"possible_duplicates"`
	PossibleDuplicateIDs []string `json:"possible_duplicate_ids"`
	// InFlightElsewhere is the DLQ's in-flight count that is not this run's:
	// messages another consumer or an interrupted run holds invisible.
	InFlightElsewhere int `json:"in_flight_elsewhere"`
	// Delayed is the DLQ's count of delayed messages
	// (ApproximateNumberOfMessagesDelayed): a scan cannot read them.
	Delayed int `json:"delayed"`
	// HoldLost counts eligible messages this run no longer held when their
	// turn came (a renewal of their visibility was refused, or the run was
	// paused past its visibility timeout): not sent, not deleted; they are
	// in the DLQ again, or another consumer has them. HoldLostIDs lists them.
	HoldLost    int      `json:"hold_lost"`
	HoldLostIDs []string `json:"hold_lost_ids"`
	// StillHeld counts messages an interrupted run held that a resume did
	// not find in the DLQ.
	StillHeld int             `json:"still_held"`
	Failures  []TargetFailure `json:"failures"`
	Journal   *string         `json:"journal"`
}

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

func runReplay(ctx context.Context, opts *ReplayOptions) (err error) {
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
	r := &replayRun{opts: opts, f: f, tally: newTally(), failures: failureTally{},
		summary: ReplaySummary{Type: "summary", DryRun: opts.DryRun, Codes: opts.policy.CodesString(), PossibleDuplicateIDs: []string{}, HoldLostIDs: []string{}, Failures: []TargetFailure{}}}
	r.out = newStdoutGuard(f.IO.Out, cancel)
	start, end := opts.policy.Window()
	r.summary.WindowStart, r.summary.WindowEnd = start.Format(time.RFC3339Nano), end.Format(time.RFC3339Nano)
	if opts.Output.Value == "ndjson" {
		r.stream = output.NewJSONStream(r.out, true)
	}
	if p := cmp.Or(opts.Resume, opts.Journal); p != "" {
		// One run at a time writes a journal; a second is refused before
		// it reads the journal or the DLQ.
		unlock, err := sqsmove.LockJournal(p)
		if err != nil {
			return &cmdutil.ExitError{Code: cmdutil.ExitUsage, Err: err}
		}
		defer unlock()
	}
	if opts.Resume != "" {
		if r.resume, err = sqsmove.ReadJournal(opts.Resume); err != nil {
			return err
		}
		if err := checkResumeJournal(opts, r.resume, opts.Queue.DLQ); err != nil {
			return err
		}
		if err := r.waitForHeld(ctx); err != nil {
			return err
		}
	}

	// Scan: from the DLQ, or from an export file. With --yes nothing waits
	// on the plan, so the replay of a fresh run starts while the scan goes
	// on (the plan is printed after it, as a record).
	r.ctx = ctx
	r.streamed = opts.Yes && !opts.DryRun && opts.FromFile == "" && opts.Resume == "" && opts.Ineligible == "release"
	if opts.FromFile != "" {
		err = r.load(ctx)
	} else {
		err = r.scan(ctx)
	}
	var replayErr error
	if r.streaming != nil {
		// Every batch is sent (or abandoned) before anything is released.
		counts, serr := r.streaming.Finish()
		replayErr = r.replayed(counts, serr)
	}
	// SQS's in-flight limit ends the scan, not the run: what was read is
	// planned, replayed or released as usual, and the run says how far it
	// got and exits 3.
	var limit *sqsmove.InFlightLimitError
	if errors.As(err, &limit) {
		err = nil
	}
	// A file that cannot be read is not a run: no summary of zeros.
	unreadFile := (opts.FromFile != "" || r.refused) && err != nil
	defer func() {
		r.finish()
		if unreadFile {
			return
		}
		if werr := r.writeSummary(); werr != nil && err == nil && !r.out.Closed() {
			err = werr
		}
		if r.stopNote != "" {
			fmt.Fprint(f.IO.ErrOut, r.stopNote)
		}
		if limit != nil && r.s != nil {
			fmt.Fprintln(f.IO.ErrOut, inFlightLimitNote(limit, r.s.queue.Visible+r.s.queue.InFlight,
				"the rest were not read; run again for them (what this run sent or parked is no longer in flight)"))
			if err == nil {
				err = cmdutil.PartialError
			}
		}
		s := r.summary
		switch {
		case r.out.Closed():
			what := fmt.Sprintf("%s sent, %s released", output.Plural(s.Sent, "message"), output.Plural(s.Released, "message"))
			if s.Journal != nil {
				what += ", journal complete: " + *s.Journal
			}
			err = stoppedError(what)
		case err == nil && (s.Failed > 0 || s.DeleteFailed > 0 || s.Abandoned > 0 || s.ReleaseFailed > 0 || s.Uncertain > 0 || s.StillHeld > 0 || s.HoldLost > 0 ||
			s.InFlightElsewhere > 0 || s.Delayed > 0 || r.unresolved > 0):
			err = cmdutil.PartialError
		}
	}()
	if err != nil {
		return cmp.Or(replayErr, err)
	}
	if r.streamErr != nil {
		return r.streamErr
	}
	if ctx.Err() != nil {
		return cmp.Or(replayErr, ctx.Err())
	}
	if err := r.checkTargets(); err != nil {
		return err
	}
	// The DLQ's counts and the target queues, read at the same time.
	checked := make(chan int, 1)
	go func() { checked <- r.checkTargetQueues(ctx) }()
	r.inFlightElsewhere(ctx)
	missing := <-checked
	r.printPlan()
	if opts.DryRun {
		fmt.Fprintln(f.IO.ErrOut, "dry run: nothing sent; every message is released")
		if missing > 0 {
			fmt.Fprintf(f.IO.ErrOut, "dry run: %s of the plan %s not exist; a replay would fail their messages\n",
				output.Plural(missing, "target queue"), map[bool]string{true: "does", false: "do"}[missing == 1])
			return cmdutil.PartialError
		}
		return nil
	}
	if r.tally.Eligible == 0 && opts.Ineligible != "park" && r.tally.AlreadySent == 0 {
		if n := r.summary.InFlightElsewhere + r.summary.StillHeld; n > 0 {
			verb := map[bool]string{true: "is", false: "are"}[n == 1]
			fmt.Fprintf(f.IO.ErrOut, "nothing visible to replay, but %s %s in flight: another consumer or an interrupted run holds them; run again once they are visible\n", output.Plural(n, "message"), verb)
			return nil // exit 3: in flight elsewhere
		}
		if n := r.summary.Delayed; n > 0 {
			verb := map[bool]string{true: "is", false: "are"}[n == 1]
			fmt.Fprintf(f.IO.ErrOut, "nothing visible to replay, but %s %s delayed in the DLQ (DelaySeconds): they cannot be read yet; run again once they are visible\n", output.Plural(n, "message"), verb)
			return nil // exit 3: delayed
		}
		fmt.Fprintln(f.IO.ErrOut, "nothing to replay")
		return nil
	}
	if r.streaming != nil {
		return replayErr
	}
	if !opts.Yes {
		ok, err := cmdutil.Confirm(f.IO, fmt.Sprintf("Replay %s?", output.Plural(r.tally.Eligible, "message")), "yes")
		if err != nil || !ok {
			fmt.Fprintln(f.IO.ErrOut, "nothing sent; every message is released")
			return err
		}
	}
	return r.replay(ctx)
}

// replayRun is one replay's state.
type replayRun struct {
	opts    *ReplayOptions
	f       *Factory
	s       *session // the DLQ, when replaying from it
	hold    *sqsmove.Hold
	source  string // DLQ URL or file name
	tally   *tally
	resume  sqsmove.Resume
	refused bool // the --resume journal is not this DLQ's: no run, no summary
	// unresolved counts the resumed journal's uncertain messages this run
	// did not send: listed as possible duplicates, exit 3.
	unresolved int
	journal    *sqsmove.Journal
	out        *stdoutGuard
	stream     *output.JSONStream
	mu         sync.Mutex
	summary    ReplaySummary
	// failures groups failed messages by target and reason; targets holds
	// what checking the plan's target queues found.
	failures failureTally
	targets  map[string]targetCheck
	// stopNote is what stopped the run, said last on stderr.
	stopNote string
	// streamed: the replay starts during the scan (--yes, a fresh run
	// from the DLQ, --ineligible release); streaming is that replay once its
	// first eligible message was seen, streamErr what stopped it before.
	streamed  bool
	streaming *sqsmove.Stream
	streamErr error
	// targetIsDLQ: isDLQ's answers, by target (the scan's goroutine only).
	targetIsDLQ map[string]bool
	ctx         context.Context
	progress    *cmdutil.Progress
}

func (r *replayRun) scan(ctx context.Context) error {
	s, err := openSession(ctx, r.f, r.opts.Queue)
	if err != nil {
		return err
	}
	r.s, r.hold, r.source = s, s.hold, s.queue.URL
	r.summary.Source = s.queue.URL
	if r.opts.Resume != "" {
		// Now that --dlq is resolved to its URL, before anything is read.
		if err := checkResumeJournal(r.opts, r.resume, s.queue.URL); err != nil {
			r.refused = true
			return err
		}
	}
	if r.streamed && pushreplay.MayTargetTheDLQ(s.queue.URL, r.opts.BaseURL) {
		r.streamed = false // checked against the whole plan first, before anything is sent
	}
	// The replay moves messages and never shows their system attributes:
	// it receives only the one a send uses (a FIFO target's group id).
	s.systemAttributes = sqsmove.MoveAttributes
	// A streamed replay sends its partial batches as soon as a receive
	// finds the DLQ drained, during the last long poll, not after it.
	s.onEmpty = func() {
		if r.streaming != nil {
			r.streaming.Flush()
		}
	}
	s.banner()
	fmt.Fprintln(r.f.IO.ErrOut, receiveNote("replay"))
	receivers := 2
	if r.streamed {
		// The scan feeds the sends: as many receives in flight as it takes
		// to keep the batches in flight fed.
		receivers = streamReceivers(r.opts.Concurrency)
	}
	return s.scanWith(ctx, 0, receivers, r.observe)
}

// streamReceivers is how many receive loops feed a streamed replay of
// concurrency batches in flight.
func streamReceivers(concurrency int) int {
	return min(max(2, concurrency/4), 8)
}

func (r *replayRun) load(ctx context.Context) error {
	hold, err := sqsmove.NewHold(nil, "", time.Minute)
	if err != nil {
		return err
	}
	r.hold, r.source = hold, r.opts.FromFile
	r.summary.Source = r.opts.FromFile
	fh, err := os.Open(r.opts.FromFile)
	if err != nil {
		return fmt.Errorf("--from-file: %w", err)
	}
	defer fh.Close()
	return hold.Load(fh, r.opts.FromFile, r.observe)
}

// observe decides one scanned message and counts it; it stops the scan
// once --max eligible messages are held.
func (r *replayRun) observe(ord int, m *sqsmove.Message) bool {
	st := r.decide(m.Body)
	r.mu.Lock() // the replay's progress reads the tally
	r.tally.add(st.Command)
	delete(r.resume.Held, m.MessageID) // it came back: the interrupted run no longer holds it
	if r.resume.Moved[m.MessageID] {
		r.tally.AlreadySent++
		r.mu.Unlock()
		return false
	}
	r.tally.decide(st.Command, st.Decision)
	stop := r.opts.Max > 0 && r.tally.Eligible >= r.opts.Max
	r.mu.Unlock()
	if r.streamed {
		return r.offer(ord, m, st) || stop
	}
	return stop
}

// offer hands a scanned message to the streamed replay, starting it at
// the first eligible message (a scan that finds none writes no journal,
// as before). It says to stop the scan when the replay cannot start.
func (r *replayRun) offer(ord int, m *sqsmove.Message, st pushreplay.Step) (stop bool) {
	if r.streamErr != nil {
		return true
	}
	var rt sqsmove.Route
	if st.Decision.Eligible {
		rt = st.Route
		if r.isDLQ(rt.Target) {
			r.streamErr = &cmdutil.ExitError{Code: cmdutil.ExitUsage, Err: pushreplay.TargetIsDLQError(st.Command.Priority, rt.Target)}
			return true
		}
	}
	if r.streaming == nil {
		if !st.Decision.Eligible {
			return false // its held record is written when the replay starts
		}
		rp, err := r.replayer(r.ctx)
		if err == nil {
			r.streaming, err = rp.Start(r.ctx)
		}
		if err != nil {
			r.streamErr = err
			return true
		}
	}
	r.streaming.Offer(ord, m, rt)
	return false
}

// isDLQ reports whether a target is the DLQ itself, comparing each target
// once (a replay has a few targets and many messages).
func (r *replayRun) isDLQ(target string) bool {
	same, ok := r.targetIsDLQ[target]
	if !ok {
		if r.targetIsDLQ == nil {
			r.targetIsDLQ = map[string]bool{}
		}
		same = pushreplay.TargetIsDLQ(target, r.s.queue.URL)
		r.targetIsDLQ[target] = same
	}
	return same
}

// decide is the processor's decision and route for a body (one function
// for both: internal/workflow/pushreplay).
func (r *replayRun) decide(body string) pushreplay.Step {
	return pushreplay.Decide(body, r.opts.policy, r.opts.BaseURL)
}

// checkTargets refuses a plan that would send to the DLQ itself.
func (r *replayRun) checkTargets() error {
	if r.s == nil {
		return nil
	}
	for k := range r.tally.ByTarget {
		if r.isDLQ(k.Target) {
			return &cmdutil.ExitError{Code: cmdutil.ExitUsage, Err: pushreplay.TargetIsDLQError(k.Priority, k.Target)}
		}
	}
	return nil
}

func (r *replayRun) printPlan() {
	w := r.f.IO.ErrOut
	t := r.tally
	fmt.Fprintf(w, "\nPlan for %s\n", r.source)
	fmt.Fprintf(w, "  window   %s … %s (inclusive, on createdAt; epoch ms %d … %d)\n", isoMs(r.opts.policy.Start), isoMs(r.opts.policy.End), r.opts.policy.Start, r.opts.policy.End)
	if r.opts.Window != "" {
		if a, b, _ := strings.Cut(r.opts.Window, "/"); pushpolicy.IsDateOnly(a) || pushpolicy.IsDateOnly(b) {
			fmt.Fprintf(w, "           a date alone means midnight UTC at the start of that day: the window ends at %s\n", isoMs(r.opts.policy.End))
		}
	}

	fmt.Fprintf(w, "  codes    %s\n", r.opts.policy.CodesString())
	fmt.Fprintf(w, "  scanned  %d\n", t.Scanned)
	fmt.Fprintf(w, "  eligible %d\n", t.Eligible)
	keys := make([]targetKey, 0, len(t.ByTarget))
	for k := range t.ByTarget {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].Code != keys[j].Code {
			return keys[i].Code < keys[j].Code
		}
		return keys[i].Priority < keys[j].Priority
	})
	for _, k := range keys {
		code, name := codeLabel(k.Code)
		note := ""
		if c, bad := r.targets[k.Target]; bad && c.missing {
			note = "  MISSING: " + reason(c.err)
		} else if bad {
			note = "  (could not check it: " + reason(c.err) + ")"
		}
		fmt.Fprintf(w, "    %6d  code %s %-24s priority %-3d -> %s%s\n", t.ByTarget[k], code, name, k.Priority, sqsmove.Name(k.Target), note)
	}
	ineligible := 0
	for _, n := range t.Ineligible {
		ineligible += n
	}
	action := "released untouched"
	if r.opts.Ineligible == "park" {
		action = "parked in the DLQ with DelaySeconds 900"
	}
	fmt.Fprintf(w, "  ineligible %d (%s)\n", ineligible, action)
	for _, c := range byCount(t.Ineligible, reasonLabel) {
		fmt.Fprintf(w, "    %6d  %s\n", c.Count, c.Name)
	}
	if t.AlreadySent > 0 {
		fmt.Fprintf(w, "  already sent by the resumed run: %d (deleted from the DLQ, not sent again)\n", t.AlreadySent)
	}
	if n := len(r.resume.Uncertain); n > 0 {
		fmt.Fprintf(w, "  uncertain in the resumed run: %d (sent, no reply known; sent again if still here: possible duplicates, listed in the summary)\n", n)
	}
	if n := r.summary.InFlightElsewhere; n > 0 {
		fmt.Fprintf(w, "  in flight %d: another consumer or an interrupted run holds them; they are not in this plan\n", n)
	}
	if n := r.summary.Delayed; n > 0 {
		fmt.Fprintf(w, "  delayed %d: delayed in the DLQ (DelaySeconds), they cannot be read yet; they are not in this plan\n", n)
	}
	if n := r.summary.StillHeld; n > 0 {
		fmt.Fprintf(w, "  still held %d: the interrupted run held them and they are not back in the DLQ; they are not in this plan\n", n)
	}
	if r.opts.Rate > 0 && t.Eligible > 0 {
		fmt.Fprintf(w, "  rate     %g msg/s (about %s)\n", r.opts.Rate, time.Duration(float64(t.Eligible)/r.opts.Rate*float64(time.Second)).Round(time.Second))
	}
	r.summary.Scanned, r.summary.Eligible, r.summary.Ineligible = t.Scanned, t.Eligible, ineligible
}

// fillScanCounts puts the scan's counts in the summary when no plan was
// printed (a streamed run stopped by a signal or a receive error): the
// summary must say what was scanned next to what was sent, so that sent +
// failed + uncertain + hold_lost + abandoned = eligible holds.
func (r *replayRun) fillScanCounts() {
	t := r.tally
	if t == nil || r.summary.Scanned != 0 || t.Scanned == 0 {
		return
	}
	ineligible := 0
	for _, n := range t.Ineligible {
		ineligible += n
	}
	r.summary.Scanned, r.summary.Eligible, r.summary.Ineligible = t.Scanned, t.Eligible, ineligible
}

// route is the processor's route, except that ineligible messages are
// parked only under --ineligible park (and only when there is a DLQ);
// otherwise they route nowhere and are released.
func (r *replayRun) route(m *sqsmove.Message) sqsmove.Route {
	st := r.decide(m.Body)
	if st.Decision.Eligible || (r.opts.Ineligible == "park" && r.s != nil) {
		return st.Route
	}
	return sqsmove.Route{}
}

func (r *replayRun) replay(ctx context.Context) error {
	rp, err := r.replayer(ctx)
	if err != nil {
		return err
	}
	counts, err := rp.Run(ctx)
	return r.replayed(counts, err)
}

// replayer opens the journal and prepares the replay of the held messages.
func (r *replayRun) replayer(ctx context.Context) (*sqsmove.Replayer, error) {
	path, err := r.journalPath()
	if err != nil {
		return nil, err
	}
	if r.journal, err = sqsmove.OpenJournal(path); err != nil {
		return nil, err
	}
	r.summary.Journal = &path
	fmt.Fprintf(r.f.IO.ErrOut, "journal: %s\n", path)
	// Write-ahead: the journal knows how long the held messages may stay
	// invisible before their visibility is extended to then.
	journal := r.journal
	r.hold.BeforeExtend(func(until time.Time) {
		journal.Write(sqsmove.Event{Event: sqsmove.EvHoldUntil, Until: until.UTC().Format(time.RFC3339Nano)})
		if err := journal.Sync(); err != nil {
			fmt.Fprintf(r.f.IO.ErrOut, "warning: %v\n", err)
		}
	})
	var api sqsmove.API
	if r.s != nil {
		api = r.s.api
	} else {
		if api, _, err = r.f.SQS(ctx); err != nil {
			return nil, err
		}
	}
	r.progress = cmdutil.NewProgress(r.f.IO.ErrOut, r.f.IO.ShowProgress())
	done := 0
	return &sqsmove.Replayer{
		API: api, Hold: r.hold, Source: r.s.sourceURL(), Journal: r.journal,
		Concurrency: r.opts.Concurrency, Rate: r.opts.Rate, Moved: r.resume.Moved, Route: r.route,
		RunInfo: map[string]any{"source": r.source, "queue_base_url": r.opts.BaseURL, "window_start": r.summary.WindowStart,
			"window_end": r.summary.WindowEnd, "codes": r.summary.Codes, "ineligible": r.opts.Ineligible},
		OnResult: func(res sqsmove.Result) {
			r.mu.Lock()
			defer r.mu.Unlock()
			done++
			r.progress.Update("replaying: %d of %d done", done, r.tally.Eligible+r.tally.AlreadySent)
			r.record(res)
			r.emit(res)
		},
	}, nil
}

// replayed notes what the replay came to in the summary, and what
// stopped it.
func (r *replayRun) replayed(counts sqsmove.Counts, err error) error {
	r.progress.Clear()
	r.summary.Sent, r.summary.Parked, r.summary.Failed = counts.Sent, counts.Parked, counts.Failed
	r.summary.DeleteFailed, r.summary.SkippedDuplicates, r.summary.Abandoned = counts.DeleteFailed, counts.SkippedDuplicates, counts.Abandoned
	r.summary.Uncertain, r.summary.HoldLost = counts.Uncertain, counts.HoldLost
	if errors.Is(err, sqsmove.ErrDeleteRefused) {
		n := counts.DeleteFailed
		verb := map[bool]string{true: "is", false: "are"}[n == 1]
		r.stopNote = fmt.Sprintf("pushdlq: the DLQ refused to delete: %s\n"+
			"stopped at once, nothing more is sent: %s %s now in both the target queue and the DLQ.\n"+
			"Do not start a fresh replay (it would send them again). Once this identity may delete from the DLQ (sqs:DeleteMessage),\n"+
			"run the same command with --resume %s: it deletes them from the DLQ without re-sending them, and replays the rest.\n",
			output.Escape(cmdutil.ErrorLine(err)), output.Plural(n, "message"), verb, *r.summary.Journal)
		return &cmdutil.ExitError{Code: cmdutil.ExitAuth}
	}
	if err != nil {
		return err
	}
	return r.ctx.Err()
}

// record notes what the summary lists: failures by target and reason, and
// the messages that may now be in their target twice.
func (r *replayRun) record(res sqsmove.Result) {
	target := res.Route.Target
	if res.Route.Park {
		target = r.source
	}
	switch {
	case res.Outcome == sqsmove.OutcomeFailed && res.Err != nil:
		r.failures.add(target, res.Err)
	case res.Outcome == sqsmove.OutcomeHoldLost:
		r.summary.HoldLostIDs = append(r.summary.HoldLostIDs, res.Msg.MessageID)
	case res.Outcome == sqsmove.OutcomeUncertain,
		(res.Outcome == sqsmove.OutcomeSent || res.Outcome == sqsmove.OutcomeParked) && r.resume.Uncertain[res.Msg.MessageID]:
		r.summary.PossibleDuplicateIDs = append(r.summary.PossibleDuplicateIDs, res.Msg.MessageID)
	}
}

// listUnresolvedUncertain lists the messages whose send the resumed
// journal left uncertain and that this run did not send (no longer
// eligible, failed, not seen): they may be in their target and in the DLQ
// still, so they stay possible duplicates, and the run exits 3.
func (r *replayRun) listUnresolvedUncertain() {
	if r.opts.DryRun || len(r.resume.Uncertain) == 0 {
		return
	}
	listed := map[string]bool{}
	for _, id := range r.summary.PossibleDuplicateIDs {
		listed[id] = true
	}
	var ids []string
	for id := range r.resume.Uncertain {
		if !listed[id] {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	r.unresolved = len(ids)
	r.summary.PossibleDuplicateIDs = append(r.summary.PossibleDuplicateIDs, ids...)
}

// waitForHeld makes a resume wait until the messages the interrupted run
// held are visible again: scanning earlier finds nothing of them, and a
// message sent but not deleted would reappear later, in both places.
func (r *replayRun) waitForHeld(ctx context.Context) error {
	held, until := len(r.resume.Held), r.resume.HeldUntil
	wait := time.Until(until)
	if held == 0 || wait <= 0 {
		return nil
	}
	w := r.f.IO.ErrOut
	if wait > r.opts.WaitHeld {
		return &cmdutil.ExitError{Code: cmdutil.ExitFailure, Err: fmt.Errorf(
			"the interrupted run holds %s invisible until %s (%s from now); resume after then, or pass --wait-held %s",
			output.Plural(held, "message"), until.UTC().Format(time.RFC3339), wait.Round(time.Second), wait.Round(time.Minute)+time.Minute)}
	}
	// A second more: SQS makes them visible at about that time, not before.
	wait += time.Second
	fmt.Fprintf(w, "the interrupted run holds %s invisible until %s: waiting %s for them (Ctrl-C stops)\n",
		output.Plural(held, "message"), until.UTC().Format(time.RFC3339), wait.Round(time.Second))
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
	}
	return nil
}

// inFlightElsewhere counts the DLQ's messages that are in flight but not
// held by this run, and the messages a resumed run held that did not come
// back: a run that finds nothing visible must say so rather than report
// "nothing to replay".
func (r *replayRun) inFlightElsewhere(ctx context.Context) {
	if r.s == nil {
		return
	}
	if r.opts.Max == 0 { // a scan stopped by --max did not look for them all
		for id := range r.resume.Held {
			if !r.resume.Moved[id] {
				r.summary.StillHeld++
			}
		}
	}
	// After the scan every message of the DLQ is visible (none: the scan
	// went round), held by this run, in flight elsewhere (another consumer,
	// an interrupted run, or a receive whose reply was lost), or delayed.
	after, err := sqsmove.Describe(ctx, r.s.api, r.s.queue.URL)
	if err != nil {
		fmt.Fprintf(r.f.IO.ErrOut, "warning: could not count the messages in flight elsewhere: %v\n", err)
		return
	}
	// Messages the interrupted run held that did not come back are counted
	// as still_held; when they are invisible (another consumer has them)
	// they are in the DLQ's in-flight count too: count them once.
	n := max(0, after.InFlight-int64(r.hold.Outstanding())-int64(r.summary.StillHeld))
	r.summary.Delayed = int(after.Delayed)
	r.summary.InFlightElsewhere = int(n)
}

// checkTargetQueues reads every target queue of the plan and returns how
// many do not exist; the plan shows why for each.
func (r *replayRun) checkTargetQueues(ctx context.Context) int {
	var targets []string
	seen := map[string]bool{}
	for k := range r.tally.ByTarget {
		if !seen[k.Target] {
			seen[k.Target] = true
			targets = append(targets, k.Target)
		}
	}
	if len(targets) == 0 {
		return 0
	}
	var api sqsmove.API
	if r.s != nil {
		api = r.s.api
	} else {
		var err error
		if api, _, err = r.f.SQS(ctx); err != nil {
			fmt.Fprintf(r.f.IO.ErrOut, "warning: could not check the target queues: %v\n", err)
			return 0
		}
	}
	r.targets = checkTargets(ctx, api, targets)
	missing := 0
	for _, c := range r.targets {
		if c.missing {
			missing++
		}
	}
	return missing
}

func (s *session) sourceURL() string {
	if s == nil {
		return ""
	}
	return s.queue.URL
}

// checkResumeJournal refuses (exit 2) a --resume file that is not a
// replay journal (an export file, say), or the journal of a replay of
// another DLQ than dlq: its held messages would never come back here, and
// this run would be appended to another queue's journal. dlq is --dlq as
// given (checked when it is a URL or a queue name) or its resolved URL.
func checkResumeJournal(o *ReplayOptions, res sqsmove.Resume, dlq string) error {
	if res.Lines > 0 && res.First != sqsmove.EvRun {
		return cmdutil.UsageErrorf("--resume %s is not a replay journal (its first line is not a %q event; an export file is replayed with --from-file); left as it is",
			o.Resume, sqsmove.EvRun)
	}
	if o.FromFile != "" {
		return nil
	}
	for _, src := range res.Sources {
		if src == "" {
			continue // a run from an export file, or one that did not say
		}
		other := src != dlq
		if !strings.Contains(dlq, "://") {
			other = !strings.ContainsAny(dlq, "/:") && path.Base(src) != dlq
		}
		if other {
			return cmdutil.UsageErrorf("--resume %s is the journal of a replay of %s, not of --dlq %s; resume it with its own DLQ (journal left as it is)",
				o.Resume, src, dlq)
		}
	}
	return nil
}

func (r *replayRun) journalPath() (string, error) {
	switch {
	case r.opts.Resume != "":
		return r.opts.Resume, nil
	case r.opts.Journal != "":
		return r.opts.Journal, nil
	}
	dir, err := r.f.StateDir()
	if err != nil {
		return "", fmt.Errorf("no place for the journal (pass --journal): %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("create the journal directory (or pass --journal): %w", err)
	}
	return filepath.Join(dir, "replay-"+r.f.Now().UTC().Format("20060102T150405Z")+"-"+fmt.Sprint(os.Getpid())+".ndjson"), nil
}

// emit writes one -o ndjson line.
func (r *replayRun) emit(res sqsmove.Result) {
	if r.stream == nil {
		return
	}
	c := pushpolicy.ParseCommand(res.Msg.Body)
	line := messageLine(res.Msg.MessageID, string(res.Outcome), c)
	if res.Route.Target != "" {
		line.Target = &res.Route.Target
	} else if res.Route.Park {
		line.Target = &r.source
	}
	if res.NewID != "" {
		line.NewID = &res.NewID
	}
	if res.Err != nil {
		e := res.Err.Error()
		line.Error = &e
	}
	if res.DeleteFailed != nil {
		e := "sent, but not deleted from the DLQ: " + res.DeleteFailed.Error()
		line.Error = &e
	}
	r.stream.Write(line)
}

func messageLine(id, outcome string, c pushpolicy.Command) MessageResult {
	line := MessageResult{Type: "message", MessageID: id, Outcome: outcome}
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
	return line
}

// finish releases what is still held (reporting each ineligible or
// unsent message on -o ndjson), and closes the journal.
func (r *replayRun) finish() {
	if r.hold == nil {
		return
	}
	if r.stream != nil {
		// One line per message still held, in receive order: the ones a dry
		// run would send, and the ineligible ones being released. Eligible
		// messages of a real run were reported by the replayer.
		r.hold.Each(func(ord int, st sqsmove.State, m *sqsmove.Message) error {
			if st != sqsmove.Held {
				return nil
			}
			step := r.decide(m.Body)
			c := step.Command
			switch d := step.Decision; {
			case d.Eligible && r.opts.DryRun:
				line := messageLine(m.MessageID, "would_send", c)
				line.Target = &d.Target
				r.stream.Write(line)
			case !d.Eligible:
				line := messageLine(m.MessageID, "released", c)
				reason := string(d.Reason)
				line.Reason = &reason
				r.stream.Write(line)
			}
			return nil
		})
	}
	if r.s != nil {
		r.summary.Released, r.summary.ReleaseFailed = r.s.close()
	} else {
		r.hold.Close()
	}
	r.summary.Failures = r.failures.rows()
	r.fillScanCounts()
	r.listUnresolvedUncertain()
	r.summary.PossibleDuplicates = len(r.summary.PossibleDuplicateIDs)
	// The journal's summary is the one printed: written after the release.
	if r.journal != nil {
		r.journal.Write(sqsmove.Event{Event: sqsmove.EvSummary, Info: r.summary})
		if err := r.journal.Close(); err != nil {
			fmt.Fprintf(r.f.IO.ErrOut, "warning: %v\n", err)
		}
	}
	w := r.f.IO.ErrOut
	if len(r.summary.Failures) > 0 {
		fmt.Fprintf(w, "failed %d; they stay in the DLQ:\n", r.summary.Failed)
		printFailures(w, r.summary.Failures)
	}
	if ids := r.summary.HoldLostIDs; len(ids) > 0 {
		fmt.Fprintf(w, "hold lost %d: the run no longer held them when their turn came (paused past --visibility-timeout %s, or another consumer received them); not sent, not deleted, they are in the DLQ again or another consumer has them:\n",
			len(ids), r.opts.Queue.Visibility)
		printIDs(w, ids)
	}
	if n := r.summary.PossibleDuplicates; n > 0 {
		fmt.Fprintf(w, "possible duplicates %d: sent with no reply known, or sent while the hold on them was lost, so they may be in their target twice (or in the target and the DLQ):\n", n)
		printIDs(w, r.summary.PossibleDuplicateIDs)
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

func (r *replayRun) writeSummary() error {
	s := r.summary
	switch r.opts.Output.Value {
	case "ndjson":
		if err := r.stream.Write(s); err != nil {
			return err
		}
		return r.stream.Close()
	case "json":
		return output.WriteJSON(r.out, s)
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
	// Counts that are shown only when not zero.
	for _, c := range []struct {
		label string
		n     int
	}{
		{"uncertain", s.Uncertain}, {"possible duplicates", s.PossibleDuplicates}, {"in flight elsewhere", s.InFlightElsewhere},
		{"hold lost", s.HoldLost}, {"delayed", s.Delayed}, {"still held", s.StillHeld}, {"abandoned", s.Abandoned},
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
	_, err := fmt.Fprint(r.out, b.String())
	return err
}
