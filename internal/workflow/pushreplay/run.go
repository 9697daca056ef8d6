package pushreplay

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/deadletter/deadletter/internal/pushpolicy"
	"github.com/deadletter/deadletter/internal/sqsmove"
	"github.com/deadletter/deadletter/internal/workflow/dlqsession"
)

// Options are what one replay is given: `pushdlq replay`'s flags once
// resolved and checked.
type Options struct {
	// Queue is the DLQ read (Queue.DLQ is empty with FromFile).
	Queue dlqsession.QueueOptions
	// BaseURL is the priority queues' prefix: a message goes to
	// BaseURL + "P" + its priority.
	BaseURL string
	Policy  pushpolicy.Policy
	// FromFile replays the messages of an export file instead of the DLQ.
	FromFile string
	// DryRun stops after the plan and releases every message.
	DryRun bool
	// Yes: nothing waits on the plan. Then a fresh run from the DLQ with
	// Ineligible "release" starts sending during its scan (streamed), and
	// no run asks Confirm.
	Yes bool
	// Ineligible is what becomes of ineligible messages: "release"
	// (untouched) or "park" (re-sent to the DLQ with the processor's delay).
	Ineligible string
	Max        int     // at most this many eligible messages (0: all)
	Rate       float64 // messages per second (0: no limit)
	// Concurrency is how many batches are in flight at once.
	Concurrency int
	// Journal is the write-ahead journal (default: a new file in StateDir).
	Journal string
	// Resume continues the run this journal records, appending to it.
	Resume string
	// WaitHeld is how long a resume waits for the messages the interrupted
	// run still holds invisible (longer: an error saying until when).
	WaitHeld time.Duration
	// Replayed counts, by notification id, the earlier runs that replayed
	// it (from the audit records); MaxReplays is the replay guard: an
	// eligible message whose notification was replayed that many times
	// already is held back (0: no limit). It stays in the DLQ, released or
	// parked as Ineligible says, and is counted held_back.
	Replayed   map[string]int
	MaxReplays int
}

// Run is one replay of push DLQ messages to their priority queues, driven
// from its Options: scan the DLQ (or load an export file) holding each
// message, refuse a plan that would send to the DLQ itself, plan, send
// with a write-ahead journal (or continue a journalled run), release the
// rest and finish the journal with the summary. It prints nothing itself:
// Out, Plan, Confirm and OnMessage are the caller's.
type Run struct {
	Options
	dlqsession.Out
	// SQS returns the client and where it points (profile, region,
	// endpoint; never a secret).
	SQS func(ctx context.Context) (sqsmove.API, string, error)
	// StateDir is where a new journal goes when Journal is empty.
	StateDir func() (string, error)
	// Now dates a new journal's name.
	Now func() time.Time
	// Plan, when set, is shown what the scan found, once it is over
	// (after the sends of a streamed run), before anything else is sent.
	Plan func(*Plan)
	// Confirm is asked before anything is sent, unless Yes; false or an
	// error stops the run, and every message is released. A nil Confirm
	// sends nothing without Yes.
	Confirm func(*Plan) (bool, error)
	// OnMessage, when set, is told each message's fate as soon as it is
	// known (the CLI's -o ndjson lines); it is never called concurrently.
	OnMessage func(Fate)
	// BeforeMove, when set, is called once, right before the run's first
	// change (its journal not yet opened, nothing sent or deleted): the
	// audit record begins there. Its error stops the run with nothing
	// moved; every message is released.
	BeforeMove func() error
}

// Counts are what a scan found, by decision.
type Counts struct {
	Scanned  int
	Eligible int
	// ByTarget counts the eligible messages by code, priority and target.
	ByTarget   map[TargetKey]int
	Ineligible map[pushpolicy.Reason]int
	// AlreadySent counts the messages the resumed run journalled as sent:
	// deleted from the DLQ, not sent again.
	AlreadySent int
}

// TargetKey is a row of the plan.
type TargetKey struct {
	Code     int // -1: no errorCode
	Priority int
	Target   string
}

// IneligibleTotal counts the ineligible messages, whatever the reason.
func (c *Counts) IneligibleTotal() int {
	n := 0
	for _, k := range c.Ineligible {
		n += k
	}
	return n
}

// decided counts one message's decision.
func (c *Counts) decided(st Step) {
	if !st.Decision.Eligible {
		c.Ineligible[st.Decision.Reason]++
		return
	}
	c.Eligible++
	code := -1
	if st.Command.HasErrorCode {
		code = st.Command.ErrorCode
	}
	c.ByTarget[TargetKey{code, st.Command.Priority, st.Decision.Target}]++
}

// Plan is what the scan found, as the run goes on to act on it.
type Plan struct {
	Source string // the DLQ's URL, or the export file
	Counts
	// Targets holds what checking the plan's target queues found for the
	// ones that could not be read; Missing counts those that do not exist.
	Targets map[string]TargetCheck
	Missing int
	// Unchecked is why no target queue could be checked at all (no SQS
	// client: an unknown profile, no region); nil when they were.
	Unchecked error
	// ResumedUncertain counts the messages whose send the resumed journal
	// left uncertain.
	ResumedUncertain int
	// InFlightElsewhere, Delayed and StillHeld are the summary's: messages
	// of the DLQ that are not in this plan.
	InFlightElsewhere, Delayed, StillHeld int
	// Nothing: there is nothing to send, park or delete; the run ends
	// after the plan (unless it is a dry run, which ends there anyway).
	Nothing bool
	// Round is 1, or the round of a park run that read on past SQS's
	// in-flight limit: Counts are then what that round's scan found, and
	// EarlierSent and EarlierParked what the earlier rounds moved.
	Round                      int
	EarlierSent, EarlierParked int
}

// RunResult is what a run came to, once every message it held is
// released and its journal has the summary.
type RunResult struct {
	Summary Summary
	// NoSummary: the run never began (its export file could not be read,
	// or the --resume journal is another DLQ's): no summary is written.
	NoSummary bool
	// Plan is what the scan found (nil: the run stopped before its plan).
	Plan *Plan
	// DeleteRefused: the DLQ refused to delete, and the run stopped at
	// once.
	DeleteRefused *DeleteRefusedError
	// InFlightLimit: SQS's in-flight limit ended the scan of DLQ (as it
	// was described when opened); what was read was planned and replayed,
	// the rest was not read. A park run that read on past the limit
	// (rounds.go) and then read the DLQ to its end has none.
	InFlightLimit *sqsmove.InFlightLimitError
	DLQ           *sqsmove.Queue
	// Unresolved counts the resumed journal's uncertain messages that this
	// run did not send (listed among the possible duplicates).
	Unresolved int
}

// Partial reports a run that left something undone or unsure: messages
// failed, uncertain, not deleted, not released, no longer held, or not
// seen (in flight elsewhere, delayed, still held by an interrupted run).
func (r *RunResult) Partial() bool {
	s := r.Summary
	return s.Failed > 0 || s.DeleteFailed > 0 || s.Abandoned > 0 || s.ReleaseFailed > 0 || s.Uncertain > 0 || s.StillHeld > 0 || s.HoldLost > 0 ||
		s.NotParked > 0 || s.InFlightElsewhere > 0 || s.Delayed > 0 || r.Unresolved > 0
}

// DeleteRefusedError stops a run at once: the DLQ refused to delete a
// message its target has (no sqs:DeleteMessage). Count messages are in
// both places; a resume from Journal deletes them without sending them
// again.
type DeleteRefusedError struct {
	Err     error
	Count   int
	Journal string
}

func (e *DeleteRefusedError) Error() string {
	return fmt.Sprintf("the DLQ refused to delete: %v; %s in both the target queue and the DLQ (resume with %s)", e.Err, dlqsession.Messages(e.Count), e.Journal)
}

func (e *DeleteRefusedError) Unwrap() error { return e.Err }

// replayRun is one replay's state.
type replayRun struct {
	*Run
	s       *dlqsession.Session // the DLQ, when replaying from it
	hold    *sqsmove.Hold
	source  string // DLQ URL or file name
	counts  Counts
	resumed sqsmove.Resume
	refused bool // the --resume journal is not this DLQ's: no run, no summary
	// unresolved counts the resumed journal's uncertain messages this run
	// did not send: listed as possible duplicates.
	unresolved int
	journal    *sqsmove.Journal
	mu         sync.Mutex
	summary    Summary
	// failures groups failed messages by target and reason; targets holds
	// what checking the plan's target queues found.
	failures  failureTally
	targets   map[string]TargetCheck
	unchecked error // why the targets could not be checked at all
	plan      *Plan
	// deleteRefused is what stopped the run when the DLQ refused a delete.
	deleteRefused *DeleteRefusedError
	// streamed: the replay starts during the scan (Yes, a fresh run
	// from the DLQ, Ineligible "release"); streaming is that replay once its
	// first eligible message was seen, streamErr what stopped it before.
	streamed  bool
	streaming *sqsmove.Stream
	streamErr error
	// targetIsDLQ: isDLQ's answers, by target (the scan's goroutine only).
	targetIsDLQ map[string]bool
	ctx         context.Context
	progress    dlqsession.Progress
	// The rounds of a park run that reads on past SQS's in-flight limit
	// (rounds.go): the replayer kept for them, the round (1 for the
	// first), the counts when it began, and what the earlier ones moved.
	rp                     *sqsmove.Replayer
	round                  int
	roundBase              Counts
	roundSent, roundParked int
	// parkedCopies holds the ids of the copies this run parked; copySeen:
	// a scan received one (its delay ran out during the run).
	parkedCopies map[string]bool
	copySeen     bool
	// parkTrouble counts, by outcome, the parks that did not happen
	// (ineligible messages: the summary's not_parked, not its failed,
	// uncertain, abandoned or hold_lost).
	parkTrouble parkCounts
	// heldBack counts, by notification id, the messages the replay guard
	// held back.
	heldBack map[string]int
}

// Replay replays the push DLQ's messages (or an export file's) to their
// priority queues. It returns a nil RunResult when it stopped before
// holding anything: the journal is another run's, the --resume journal
// cannot be read or is not this DLQ's, or the messages the interrupted run
// holds stay invisible longer than WaitHeld. Otherwise every message it
// held is released before it returns, with the error that stopped it (nil
// when it ran to its end, whatever became of each message: see
// RunResult.Partial); a *dlqsession.UsageError is a refusal of its inputs.
func (r *Run) Replay(ctx context.Context) (*RunResult, error) {
	rr := &replayRun{Run: r, failures: failureTally{}, round: 1, parkedCopies: map[string]bool{}, heldBack: map[string]int{},
		counts:    newCounts(),
		roundBase: newCounts(),
		summary: Summary{Type: "summary", DryRun: r.DryRun, Codes: r.Policy.CodesString(), PossibleDuplicateIDs: []string{}, HoldLostIDs: []string{}, Failures: []TargetFailure{},
			HeldBackNotifications: []HeldBackNotification{}}}
	start, end := r.Policy.Window()
	rr.summary.WindowStart, rr.summary.WindowEnd = start.Format(time.RFC3339Nano), end.Format(time.RFC3339Nano)
	return rr.run(ctx)
}

// run is the replay, in its stages:
//  1. lock the journal; for a resume, read it and wait for what the
//     interrupted run still holds (readResumed);
//  2. scan the DLQ or load the export file, a streamed run sending as it
//     goes (read);
//  3. check the targets, plan, confirm and replay, round after round past
//     SQS's in-flight limit (rounds);
//  4. release what is still held and finish the journal with the summary
//     (finish, deferred: it runs whatever stopped the stages before it).
func (r *replayRun) run(ctx context.Context) (res *RunResult, err error) {
	if p := cmp.Or(r.Resume, r.Journal); p != "" {
		// One run at a time writes a journal; a second is refused before
		// it reads the journal or the DLQ.
		unlock, err := sqsmove.LockJournal(p)
		if err != nil {
			return nil, &dlqsession.UsageError{Err: err}
		}
		defer unlock()
	}
	if err := r.readResumed(ctx); err != nil {
		return nil, err
	}
	limit, replayErr, err := r.read(ctx)
	// A file that cannot be read, or a DLQ that could not be opened (no
	// region, no such queue, credentials refused), is not a run: no
	// summary of zeros.
	unread := (r.FromFile != "" || r.refused || r.s == nil) && err != nil
	defer func() {
		r.finish()
		res = r.result(unread, limit)
	}()
	if err != nil {
		return nil, cmp.Or(replayErr, err)
	}
	if r.streamErr != nil {
		return nil, r.streamErr
	}
	if ctx.Err() != nil {
		return nil, cmp.Or(replayErr, ctx.Err())
	}
	return nil, r.rounds(ctx, &limit, replayErr)
}

// readResumed reads the --resume journal, checks that it is this DLQ's
// and waits for the messages the interrupted run still holds; nothing
// without --resume.
func (r *replayRun) readResumed(ctx context.Context) (err error) {
	if r.Resume == "" {
		return nil
	}
	if r.resumed, err = sqsmove.ReadJournal(r.Resume); err != nil {
		return err
	}
	if err := r.checkResumeJournal(r.Queue.DLQ); err != nil {
		return err
	}
	return r.waitForHeld(ctx)
}

// read scans the DLQ, or loads an export file. With Yes nothing waits on
// the plan, so the replay of a fresh run starts while the scan goes on
// (the plan is made after it, as a record): replayErr is what that replay
// came to. SQS's in-flight limit ends the scan, not the run: what was
// read is planned, replayed or released as usual, limit says how far it
// got, and err is nil.
func (r *replayRun) read(ctx context.Context) (limit *sqsmove.InFlightLimitError, replayErr, err error) {
	r.ctx = ctx
	r.streamed = r.Yes && !r.DryRun && r.FromFile == "" && r.Resume == "" && r.Ineligible == "release"
	if r.FromFile != "" {
		err = r.load(ctx)
	} else {
		err = r.scan(ctx)
	}
	if r.streaming != nil {
		// Every batch is sent (or abandoned) before anything is released.
		counts, serr := r.streaming.Finish()
		replayErr = r.replayed(counts, serr)
	}
	if errors.As(err, &limit) {
		err = nil
	}
	return limit, replayErr, err
}

// rounds plans what the scan read, asks, and replays it. A park run whose
// scan SQS's in-flight limit stopped replays what it read (every message
// is sent or parked, and so deleted: no longer in flight), then reads on
// (rounds.go, which updates *limit) and plans again. replayErr is what a
// streamed run's replay came to.
func (r *replayRun) rounds(ctx context.Context, limit **sqsmove.InFlightLimitError, replayErr error) error {
	for {
		if err := r.checkTargets(); err != nil {
			return r.stopRound(err)
		}
		r.makePlan(ctx, r.counts.since(r.roundBase))
		if r.Plan != nil {
			r.Plan(r.plan)
		}
		if r.DryRun || r.plan.Nothing {
			return nil
		}
		if r.streaming != nil {
			return replayErr
		}
		if !r.Yes {
			if r.Confirm == nil {
				return r.stopRound(nil)
			}
			if ok, err := r.Confirm(r.plan); err != nil || !ok {
				return r.stopRound(err)
			}
		}
		if err := r.replay(ctx); err != nil || *limit == nil || !r.mayReadOn() {
			return err
		}
		if more, err := r.readOn(ctx, limit); err != nil || !more {
			return r.stopRound(err)
		}
	}
}

// result is what the run came to, once finished; limit is what stopped
// its last scan (nil: nothing did).
func (r *replayRun) result(unread bool, limit *sqsmove.InFlightLimitError) *RunResult {
	res := &RunResult{Summary: r.summary, NoSummary: unread, Plan: r.plan, DeleteRefused: r.deleteRefused, Unresolved: r.unresolved}
	if limit != nil && r.s != nil {
		res.InFlightLimit, res.DLQ = limit, &r.s.Queue
	}
	return res
}

// makePlan checks the plan's target queues and counts the DLQ's messages
// that are not in it; counts are what this round's scan found (the whole
// scan, unless the run reads on past SQS's in-flight limit).
func (r *replayRun) makePlan(ctx context.Context, counts Counts) {
	// The DLQ's counts and the target queues, read at the same time.
	checked := make(chan int, 1)
	go func() { checked <- r.checkTargetQueues(ctx, counts) }()
	r.inFlightElsewhere(ctx)
	missing := <-checked
	r.plan = &Plan{Source: r.source, Counts: counts, Targets: r.targets, Missing: missing, Unchecked: r.unchecked, ResumedUncertain: len(r.resumed.Uncertain),
		InFlightElsewhere: r.summary.InFlightElsewhere, Delayed: r.summary.Delayed, StillHeld: r.summary.StillHeld,
		Nothing: counts.Eligible == 0 && r.Ineligible != "park" && counts.AlreadySent == 0,
		Round:   r.round, EarlierSent: r.roundSent, EarlierParked: r.roundParked}
}

// checkTargets refuses a plan that would send to the DLQ itself.
func (r *replayRun) checkTargets() error {
	if r.s == nil {
		return nil
	}
	for k := range r.counts.ByTarget {
		if r.isDLQ(k.Target) {
			return &dlqsession.UsageError{Err: TargetIsDLQError(k.Priority, k.Target)}
		}
	}
	return nil
}

// api is the DLQ's client, or a new one for a run from a file.
func (r *replayRun) api(ctx context.Context) (sqsmove.API, error) {
	if r.s != nil {
		return r.s.API, nil
	}
	api, _, err := r.SQS(ctx)
	return api, err
}

// checkTargetQueues reads every target queue of the plan and returns how
// many do not exist; the plan shows why for each.
func (r *replayRun) checkTargetQueues(ctx context.Context, counts Counts) int {
	var targets []string
	seen := map[string]bool{}
	for k := range counts.ByTarget {
		if !seen[k.Target] {
			seen[k.Target] = true
			targets = append(targets, k.Target)
		}
	}
	if len(targets) == 0 {
		return 0
	}
	api, err := r.api(ctx)
	if err != nil {
		r.unchecked = err // the plan says why (Plan.Unchecked)
		return 0
	}
	r.targets = checkTargets(ctx, api, targets)
	missing := 0
	for _, c := range r.targets {
		if c.Missing {
			missing++
		}
	}
	return missing
}

// inFlightElsewhere counts the DLQ's messages that are in flight but not
// held by this run, and the messages a resumed run held that did not come
// back: a run that finds nothing visible must say so rather than report
// "nothing to replay".
func (r *replayRun) inFlightElsewhere(ctx context.Context) {
	if r.s == nil {
		return
	}
	if r.Max == 0 { // a scan stopped by Max did not look for them all
		// Counted again in each round, as messages come back.
		r.summary.StillHeld = 0
		for id := range r.resumed.Held {
			if !r.resumed.Moved[id] {
				r.summary.StillHeld++
			}
		}
	}
	// After the scan every message of the DLQ is visible (none: the scan
	// went round), held by this run, in flight elsewhere (another consumer,
	// an interrupted run, or a receive whose reply was lost), or delayed.
	after, err := sqsmove.Describe(ctx, r.s.API, r.s.Queue.URL)
	if err != nil {
		r.Log("warning: could not count the messages in flight elsewhere: %v", err)
		return
	}
	// Messages the interrupted run held that did not come back are counted
	// as still_held; when they are invisible (another consumer has them)
	// they are in the DLQ's in-flight count too: count them once.
	n := max(0, after.InFlight-int64(r.hold.Outstanding())-int64(r.summary.StillHeld))
	// The copies this run parked in its earlier rounds are delayed in the
	// DLQ (for 15 minutes, longer than a round): not someone else's.
	r.summary.Delayed = max(0, int(after.Delayed)-r.summary.Parked)
	r.summary.InFlightElsewhere = int(n)
}
