package sqsmove

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/deadletter/deadletter/internal/awsconfig"
)

// DefaultMaxBatchBytes is the request size a batch is kept under: the
// classic SQS limit of 256 KiB, which every region and emulator accepts.
// A single larger message is sent alone.
const DefaultMaxBatchBytes = 256 << 10

// Route says what to do with one held message.
type Route struct {
	Target string // queue URL to move it to
	Park   bool   // re-send it to the source queue with DelaySeconds
	Delay  int32  // seconds, for Park
	Key    string // caller's label, echoed in results (e.g. the code)
}

// Outcome of one message.
type Outcome string

const (
	OutcomeSent             Outcome = "sent"
	OutcomeParked           Outcome = "parked"
	OutcomeFailed           Outcome = "failed"            // not moved; it stays in the source
	OutcomeSkippedDuplicate Outcome = "skipped_duplicate" // already moved by an earlier run
	OutcomeAbandoned        Outcome = "abandoned"         // interrupted before it was sent; stays in the source
	// OutcomeUncertain: the send went out but no reply came back (the
	// connection was cut, the reply was unreadable, the server failed with
	// a 5xx). The message may be in the target already; it is not deleted
	// from the source, so it is a possible duplicate, never a loss.
	OutcomeUncertain Outcome = "uncertain"
	// OutcomeHoldLost: the run no longer held the message when its turn
	// came (a renewal of its visibility was refused, or the process was
	// paused past the hold's deadline). It was not sent and not deleted: it
	// is visible in the source again, or another consumer has it.
	OutcomeHoldLost Outcome = "hold_lost"
)

// Result is the outcome of one message.
type Result struct {
	Ord          int
	Msg          *Message
	Route        Route
	Outcome      Outcome
	NewID        string // the id the target gave it
	Err          error  // why it failed
	DeleteFailed error  // sent, but the delete from the source failed
}

// Counts sums the results of a replay.
type Counts struct {
	Sent, Parked, Failed, SkippedDuplicates, Abandoned, DeleteFailed, Uncertain, HoldLost int
	Batches                                                                               int
}

// Replayer moves held messages to their routes: one canary message first
// for each target, then batches by count (10) and by bytes, at most Rate
// messages per second over Concurrency workers. A message is deleted from
// the source only after its target accepted it, and every batch is in the
// journal before it is sent.
type Replayer struct {
	API           API
	Hold          *Hold
	Source        string // the source queue URL
	Journal       *Journal
	Concurrency   int
	Rate          float64 // messages per second; 0 is unlimited
	MaxBatchBytes int
	Moved         map[string]bool      // ids an earlier run moved (from ReadJournal)
	OnResult      func(Result)         // called for every message, from any goroutine
	Route         func(*Message) Route // called twice per message (canary pass, then batches)
	RunInfo       any                  // written in the journal's run event
	batchSeq      atomic.Int64
	limiter       *limiter
	deadMu        sync.Mutex
	dead          map[string]error // targets whose canary failed
	counts        Counts
	countsMu      sync.Mutex
	fatal         error
	fatalOnce     sync.Once
}

type entry struct {
	Ref
	route Route
}

type batch struct {
	target  string
	park    bool
	entries []entry
	bytes   int
}

// ErrTargetRejected marks a target whose canary failed with an error that
// is not about that one message (no such queue, access denied).
var ErrTargetRejected = errors.New("target queue rejected the canary message")

// begin sets the defaults, starts the rate limiter and writes the run
// event; it returns the most entries a batch may have.
func (r *Replayer) begin() (int, error) {
	if r.Concurrency <= 0 {
		r.Concurrency = 4
	}
	if r.MaxBatchBytes <= 0 {
		r.MaxBatchBytes = DefaultMaxBatchBytes
	}
	r.dead = map[string]error{}
	maxEntries := 10
	if r.Rate > 0 {
		r.limiter = newLimiter(r.Rate)
		maxEntries = min(maxEntries, r.limiter.maxBatch())
	}
	return maxEntries, r.Journal.Write(Event{Event: EvRun, Target: r.Source, Info: r.RunInfo})
}

// Run replays every held message that routes somewhere. Messages that
// route nowhere, fail or are abandoned stay held; the caller releases them.
// It returns an error only for what stops the whole run (the journal cannot
// be written, the credentials are refused).
func (r *Replayer) Run(ctx context.Context) (Counts, error) {
	maxEntries, err := r.begin()
	if err != nil {
		return r.counts, err
	}
	if err := r.journalHeld(); err != nil {
		return r.counts, err
	}

	// Pass 0: the deletes an earlier run owes (messages it sent and did
	// not delete), before anything is sent: if the source still refuses
	// deletes, the run stops without putting one more message in both
	// places.
	var owed []Ref
	_ = r.Hold.Each(func(ord int, st State, m *Message) error {
		if st == Held && r.Moved[m.MessageID] && r.fatalErr() == nil {
			if owed = append(owed, Ref{ord, m}); len(owed) == 10 {
				r.deleteDuplicates(ctx, owed)
				owed = nil
			}
		}
		return nil
	})
	if len(owed) > 0 && r.fatalErr() == nil {
		r.deleteDuplicates(ctx, owed)
	}
	if err := r.fatalErr(); err != nil {
		r.abandonRest(nil)
		return r.counts, err
	}

	// Pass 1: one canary per target, sent alone, before anything else is
	// sent to that target.
	canary := map[string]bool{} // targets that had their canary
	canaryOrd := map[int]bool{} // the canary messages, done in pass 1
	err = r.Hold.Each(func(ord int, st State, m *Message) error {
		if st != Held || ctx.Err() != nil || r.Moved[m.MessageID] || r.fatalErr() != nil {
			return nil
		}
		rt := r.Route(m)
		target := r.queueOf(rt)
		if target == "" || canary[target] {
			return nil
		}
		canary[target] = true
		canaryOrd[ord] = true
		b := &batch{target: target, park: rt.Park, entries: []entry{{Ref{ord, m}, rt}}, bytes: m.size()}
		err := r.send(ctx, b, true)
		if len(b.entries) == 0 {
			canary[target] = false // not sent: the hold on it was lost; the next message is the canary
		}
		return err
	})
	if err == nil {
		err = r.fatalErr()
	}
	if err != nil || ctx.Err() != nil {
		r.abandonRest(canaryOrd)
		return r.counts, err
	}

	// Pass 2: everything else, batched per target, over the workers.
	work := make(chan *batch, r.Concurrency)
	var wg sync.WaitGroup
	for range r.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.worker(ctx, work)
		}()
	}
	pending := &batcher{maxEntries: maxEntries, maxBytes: r.MaxBatchBytes}
	dispatch := func(b *batch) {
		if len(b.entries) > 0 {
			work <- b
		}
	}
	err = r.Hold.Each(func(ord int, st State, m *Message) error {
		if st == Lost && !canaryOrd[ord] && !r.Moved[m.MessageID] {
			if rt := r.Route(m); r.queueOf(rt) != "" {
				r.holdLost(Ref{ord, m}, rt)
			}
			return nil
		}
		if st != Held || canaryOrd[ord] {
			return nil
		}
		if ctx.Err() != nil || r.fatalErr() != nil {
			// Left held, and released by the caller: abandoned.
			if rt := r.Route(m); r.queueOf(rt) != "" && !r.Moved[m.MessageID] {
				r.emit(Result{Ord: ord, Msg: m, Route: rt, Outcome: OutcomeAbandoned})
			}
			return nil
		}
		if r.Moved[m.MessageID] {
			return nil // its delete was done in pass 0
		}
		rt := r.Route(m)
		target := r.queueOf(rt)
		if target == "" {
			return nil
		}
		if err := r.deadTarget(target); err != nil {
			r.emit(Result{Ord: ord, Msg: m, Route: rt, Outcome: OutcomeFailed, Err: err})
			return nil
		}
		if full := pending.add(target, entry{Ref{ord, m}, rt}); full != nil {
			dispatch(full)
		}
		return nil
	})
	for _, b := range pending.rest() {
		dispatch(b)
	}
	close(work)
	wg.Wait()
	if err == nil {
		err = r.fatalErr()
	}
	return r.counts, err
}

// journalHeld records, before anything is sent, which messages this run
// holds invisible and until when: a resume started too early learns from
// it what to wait for. Messages loaded from a file are held by no queue.
func (r *Replayer) journalHeld() error {
	if r.Hold.api == nil {
		return nil
	}
	until := r.Hold.Deadline()
	var ids []string
	var werr error
	flush := func() {
		if len(ids) > 0 && werr == nil {
			werr = r.Journal.Write(Event{Event: EvHeld, IDs: ids, Until: until})
		}
		ids = nil
	}
	err := r.Hold.Each(func(_ int, st State, m *Message) error {
		if st == Held || st == Extra {
			ids = append(ids, m.MessageID)
			if len(ids) == 500 {
				flush()
			}
		}
		return nil
	})
	flush()
	if err = errors.Join(err, werr); err != nil {
		return err
	}
	return r.Journal.Sync()
}

// queueOf is the queue a route sends to: the source itself when parking.
func (r *Replayer) queueOf(rt Route) string {
	if rt.Park {
		return r.Source
	}
	return rt.Target
}

func (r *Replayer) deadTarget(target string) error {
	r.deadMu.Lock()
	defer r.deadMu.Unlock()
	return r.dead[target]
}

func (r *Replayer) fatalErr() error {
	r.deadMu.Lock()
	defer r.deadMu.Unlock()
	return r.fatal
}

func (r *Replayer) setFatal(err error) {
	r.fatalOnce.Do(func() {
		r.deadMu.Lock()
		r.fatal = err
		r.deadMu.Unlock()
	})
}

// holdLost reports a message the run no longer held when its turn came.
func (r *Replayer) holdLost(ref Ref, rt Route) {
	_ = r.Journal.Write(Event{Event: EvHoldLost, ID: ref.Msg.MessageID})
	r.emit(Result{Ord: ref.Ord, Msg: ref.Msg, Route: rt, Outcome: OutcomeHoldLost, Err: ErrHoldLost})
}

// ErrHoldLost says why a message was not sent.
var ErrHoldLost = errors.New("the run no longer held it (its visibility was not renewed in time, or another consumer received it): not sent, not deleted")

// stillHeld drops from a batch the messages the run no longer holds,
// reporting each; when the hold's deadline is too close for a send to
// finish before it, that is every message.
func (r *Replayer) stillHeld(b *batch) {
	r.Hold.Expiring(r.Hold.Margin())
	kept := b.entries[:0]
	for _, e := range b.entries {
		if r.Hold.State(e.Ord) == Lost {
			r.holdLost(e.Ref, e.route)
			continue
		}
		kept = append(kept, e)
	}
	b.entries = kept
}

// abandonRest reports as abandoned every message still held that routes
// somewhere and was neither a canary nor moved by an earlier run: the run
// stopped before their turn. The caller releases them.
func (r *Replayer) abandonRest(skip map[int]bool) {
	_ = r.Hold.Each(func(ord int, st State, m *Message) error {
		if (st != Held && st != Lost) || skip[ord] || r.Moved[m.MessageID] {
			return nil
		}
		rt := r.Route(m)
		switch {
		case r.queueOf(rt) == "":
		case st == Lost:
			r.holdLost(Ref{ord, m}, rt)
		default:
			r.emit(Result{Ord: ord, Msg: m, Route: rt, Outcome: OutcomeAbandoned})
		}
		return nil
	})
}

func (r *Replayer) abandon(b *batch) {
	for _, e := range b.entries {
		r.emit(Result{Ord: e.Ord, Msg: e.Msg, Route: e.route, Outcome: OutcomeAbandoned})
	}
}

func (r *Replayer) emit(res Result) {
	r.countsMu.Lock()
	switch res.Outcome {
	case OutcomeSent:
		r.counts.Sent++
	case OutcomeParked:
		r.counts.Parked++
	case OutcomeFailed:
		r.counts.Failed++
	case OutcomeSkippedDuplicate:
		r.counts.SkippedDuplicates++
	case OutcomeAbandoned:
		r.counts.Abandoned++
	case OutcomeUncertain:
		r.counts.Uncertain++
	case OutcomeHoldLost:
		r.counts.HoldLost++
	}
	if res.DeleteFailed != nil {
		r.counts.DeleteFailed++
	}
	r.countsMu.Unlock()
	if r.OnResult != nil {
		r.OnResult(res)
	}
}

// worker sends the batches of work, one at a time. The delete of a batch
// the target accepted goes out with the next batch's send, when that batch
// is already waiting: the next batch's send record and this batch's
// outcome records are made durable by one fsync, then the two calls are in
// flight together. A delete still never precedes the confirmed send it
// follows, nor the sync of that send's outcome records (sent, in the
// journal before the delete, so a run killed in between is resumed
// without sending them again). When no batch is waiting, the delete goes
// at once, as before. With a rate limit nothing is held back: the wait for
// the limiter must not delay a delete. With one worker (Concurrency 1)
// nothing is pipelined either: such a run keeps one call in flight, so a
// delete that never comes back stops it before anything more is sent (a
// run killed then has no send without an outcome in its journal).
func (r *Replayer) worker(ctx context.Context, work <-chan *batch) {
	serial := r.limiter != nil || r.Concurrency <= 1
	// The deletes that go with a send run on a goroutine of their own
	// that lives as long as the worker: one started per delete would grow
	// its stack again for every SDK call.
	deletes, deleted := make(chan *sentBatch), make(chan struct{})
	go func() {
		for p := range deletes {
			r.finishSent(p)
			deleted <- struct{}{}
		}
	}()
	defer close(deletes)
	var prev *sentBatch
	finishPrev := func() {
		if prev != nil {
			r.finishSent(prev)
			prev = nil
		}
	}
	defer finishPrev()
	for {
		var b *batch
		var ok bool
		if prev == nil {
			b, ok = <-work
		} else {
			select {
			case b, ok = <-work:
			default:
				finishPrev() // nothing waiting: its delete goes now
				b, ok = <-work
			}
		}
		if !ok {
			return
		}
		if ctx.Err() != nil || r.fatalErr() != nil || serial {
			finishPrev()
			if ctx.Err() != nil || r.fatalErr() != nil {
				r.abandon(b)
				continue
			}
		}
		inFlight := false
		p := prev
		prev = nil
		sb, _ := r.sendBatch(ctx, b, false, func() {
			// b's send record is durable, and so are p's outcome records
			// (written before it): p's delete goes with b's send.
			if p != nil {
				deletes <- p
				p, inFlight = nil, true
			}
		})
		if p != nil {
			r.finishSent(p) // b was not sent: p's delete goes alone
		}
		if inFlight {
			<-deleted
		}
		prev = sb
	}
}

// sentBatch is a batch whose send came back, with its outcome records
// written (not yet synced) and what is left to do: the delete of what the
// target accepted, and the results.
type sentBatch struct {
	work     context.Context // the run's context, without its cancel: a sent batch is always finished
	b        *batch
	seq      int64
	res      sendResult
	toDelete []Ref
	outcome  Outcome
	// journalEnd is the journal's end once its outcome records were
	// written: the delete waits until the journal is durable up to there.
	journalEnd int64
}

// send sends one batch and deletes from the source what the target
// accepted. In-flight work is finished even when ctx is cancelled: a batch
// that was sent is always deleted and journalled.
func (r *Replayer) send(ctx context.Context, b *batch, isCanary bool) error {
	sb, err := r.sendBatch(ctx, b, isCanary, nil)
	if sb != nil {
		r.finishSent(sb)
	}
	return err
}

// sendBatch is the first half of send: the send record, synced, then the
// send, then the outcome records (buffered). beforeSend, when not nil, is
// called once the send record is durable, right before the send. It
// returns nil when nothing was sent.
func (r *Replayer) sendBatch(ctx context.Context, b *batch, isCanary bool, beforeSend func()) (*sentBatch, error) {
	if r.limiter != nil {
		if err := r.limiter.wait(ctx, len(b.entries)); err != nil {
			r.abandon(b)
			return nil, nil
		}
	}
	r.stillHeld(b)
	if len(b.entries) == 0 {
		return nil, nil
	}
	work := context.WithoutCancel(ctx)
	seq := r.batchSeq.Add(1)
	ids := make([]string, len(b.entries))
	for i, e := range b.entries {
		ids[i] = e.Msg.MessageID
	}
	err := r.Journal.Write(Event{Event: EvSend, Batch: seq, Target: b.target, IDs: ids})
	if err == nil {
		err = r.Journal.Sync()
	}
	if err != nil {
		// Without the write-ahead record there is no sending.
		r.setFatal(err)
		r.abandon(b)
		return nil, err
	}
	r.countsMu.Lock()
	r.counts.Batches++
	r.countsMu.Unlock()
	if beforeSend != nil {
		beforeSend()
	}

	res := sendEntries(work, r.API, b)
	// Paused past the hold's deadline while the send was in flight: the
	// messages were ours when sent, but others may have received them since.
	r.Hold.Expiring(0)
	if isCanary && res.callErr != nil {
		// The whole call failed on the first message for this target: the
		// target is missing or refuses us. Touch nothing else for it.
		r.deadMu.Lock()
		r.dead[b.target] = fmt.Errorf("%w: %w", ErrTargetRejected, res.callErr)
		r.deadMu.Unlock()
	}
	if isCanary && len(res.uncertain) > 0 {
		// The canary may or may not have arrived: the target is not proven,
		// so nothing else goes there in this run.
		r.deadMu.Lock()
		r.dead[b.target] = fmt.Errorf("%w: %w", ErrCanaryUncertain, res.uncertain[b.entries[0].Ord])
		r.deadMu.Unlock()
	}
	if res.callErr != nil && awsconfig.IsAuthError(res.callErr) {
		r.setFatal(res.callErr) // credentials refused or expired: stop sending anywhere
	}
	outcome, event := OutcomeSent, EvSent
	if b.park {
		outcome, event = OutcomeParked, EvParked
	}
	var toDelete []Ref
	for _, e := range b.entries {
		id, ok := res.accepted[e.Ord]
		if !ok {
			continue
		}
		_ = r.Journal.Write(Event{Event: event, Batch: seq, ID: e.Msg.MessageID, Target: b.target, NewID: id})
		if r.Hold.State(e.Ord) == Lost {
			// The hold was lost while the send was in flight: another
			// consumer may have received the message and replayed it too.
			// It is not deleted (it is not ours), and it may now be in its
			// target twice. A resume deletes it if it is still in the DLQ.
			delete(res.accepted, e.Ord)
			res.uncertain[e.Ord] = fmt.Errorf("sent (new id %s), but the run lost its hold on it meanwhile, so another consumer may have replayed it too: %w", id, ErrHoldLost)
			continue
		}
		toDelete = append(toDelete, e.Ref)
	}
	for _, e := range b.entries {
		if err, ok := res.failed[e.Ord]; ok {
			if isCanary && res.callErr != nil {
				err = r.deadTarget(b.target)
			}
			_ = r.Journal.Write(Event{Event: EvSendFailed, Batch: seq, ID: e.Msg.MessageID, Target: b.target, Error: err.Error()})
			r.emit(Result{Ord: e.Ord, Msg: e.Msg, Route: e.route, Outcome: OutcomeFailed, Err: err})
		}
		if err, ok := res.uncertain[e.Ord]; ok {
			_ = r.Journal.Write(Event{Event: EvUncertain, Batch: seq, ID: e.Msg.MessageID, Target: b.target, Error: err.Error()})
			r.emit(Result{Ord: e.Ord, Msg: e.Msg, Route: e.route, Outcome: OutcomeUncertain, Err: err})
		}
	}
	return &sentBatch{work: work, b: b, seq: seq, res: res, toDelete: toDelete, outcome: outcome, journalEnd: r.Journal.end()}, nil
}

// finishSent is the second half of send: the outcome records are made
// durable (at once when a later send record's sync already covered
// them), then what the target accepted is deleted from the source, and
// every result is journalled and reported.
func (r *Replayer) finishSent(sb *sentBatch) {
	b, seq, res, toDelete, outcome := sb.b, sb.seq, sb.res, sb.toDelete, sb.outcome
	work := sb.work
	if err := r.Journal.syncTo(sb.journalEnd); err != nil {
		r.setFatal(err)
	}
	delFailed := map[int]error{}
	lateDelete := false
	if len(toDelete) > 0 {
		delFailed = r.Hold.Delete(work, toDelete)
		// The deadline passed before the delete came back: it may have
		// reached SQS after another consumer received the message.
		lateDelete = r.Hold.Expiring(0)
	}
	r.stopOnRefusedDelete(delFailed)
	for _, e := range b.entries {
		id, ok := res.accepted[e.Ord]
		if !ok {
			continue
		}
		out := Result{Ord: e.Ord, Msg: e.Msg, Route: e.route, Outcome: outcome, NewID: id}
		if _, bad := delFailed[e.Ord]; !bad && lateDelete {
			err := fmt.Errorf("sent (new id %s) and deleted, but the run's hold ran out before the delete came back (the process was paused), so another consumer may have received it and replay it too: %w", id, ErrHoldLost)
			_ = r.Journal.Write(Event{Event: EvDeleted, Batch: seq, ID: e.Msg.MessageID})
			_ = r.Journal.Write(Event{Event: EvUncertain, Batch: seq, ID: e.Msg.MessageID, Target: b.target, Error: err.Error()})
			r.emit(Result{Ord: e.Ord, Msg: e.Msg, Route: e.route, Outcome: OutcomeUncertain, Err: err})
			continue
		}
		if err, bad := delFailed[e.Ord]; bad && (isGone(err) || r.Hold.State(e.Ord) == Lost) {
			// Its receipt handle was no longer valid: another consumer
			// received it after it was sent, and may replay it too.
			err = fmt.Errorf("sent (new id %s), but the run no longer held it when deleting it (%w), so another consumer may replay it too: %w", id, err, ErrHoldLost)
			_ = r.Journal.Write(Event{Event: EvUncertain, Batch: seq, ID: e.Msg.MessageID, Target: b.target, Error: err.Error()})
			r.emit(Result{Ord: e.Ord, Msg: e.Msg, Route: e.route, Outcome: OutcomeUncertain, Err: err})
			continue
		}
		if err, bad := delFailed[e.Ord]; bad {
			out.DeleteFailed = err
			_ = r.Journal.Write(Event{Event: EvDeleteFailed, Batch: seq, ID: e.Msg.MessageID, Error: err.Error()})
		} else {
			_ = r.Journal.Write(Event{Event: EvDeleted, Batch: seq, ID: e.Msg.MessageID})
		}
		r.emit(out)
	}
}

// ErrDeleteRefused stops a run whose deletes from the source are refused
// for lack of permission: every message sent after that would stay in the
// source too, in two places.
var ErrDeleteRefused = errors.New("the source queue refused to delete messages that were sent")

// stopOnRefusedDelete stops the run when a delete was refused for lack of
// permission (no retry fixes that).
func (r *Replayer) stopOnRefusedDelete(failed map[int]error) {
	for _, err := range failed {
		if awsconfig.IsAuthError(err) {
			r.setFatal(fmt.Errorf("%w: %w", ErrDeleteRefused, err))
			return
		}
	}
}

// ErrCanaryUncertain marks a target whose canary got no reply.
var ErrCanaryUncertain = errors.New("the canary message got no reply, so the target queue is not proven; nothing else was sent to it")

// sendResult is what one batch's SendMessageBatch calls came to: each
// entry is accepted (with the id the target gave it), failed (the target
// said no; it is safe to send again) or uncertain (no reply: it may be in
// the target already). callErr is set when a whole call was refused.
type sendResult struct {
	accepted  map[int]string
	failed    map[int]error
	uncertain map[int]error
	callErr   error
}

// SendOnce turns the SDK's own retries off for a send: the SDK retries a
// request whose reply was lost, which can deliver a message twice with
// nothing to say so. sendEntries retries only what the server refused; a
// caller that sends one message (the db writer's dead letters) passes it
// too, and reports a lost reply as a possible duplicate.
func SendOnce(o *sqs.Options) {
	if o.Retryer != nil {
		o.Retryer = retry.AddWithMaxAttempts(o.Retryer, 1)
	}
}

// OutcomeUnknown reports whether a failed call may still have taken
// effect: the request may have reached the server but its reply did not
// come back (a cut connection, a timeout, an unreadable reply, or a 5xx).
// A refusal (4xx) or a connection never made is a definite failure.
func OutcomeUnknown(err error) bool {
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) && re.Response != nil {
		s := re.HTTPStatusCode()
		return s < 400 || s >= 500
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return false
	}
	var se *smithyhttp.RequestSendError
	if errors.As(err, &se) {
		return true
	}
	var de *smithy.DeserializationError
	return errors.As(err, &de) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		checksumMismatch(err)
}

// checksumMismatch reports the SDK's own check of the MD5 digests in a
// reply (MD5OfMessageBody, MD5OfMessageAttributes) failing. The check runs
// on the reply, so the server has already accepted the request: for a send
// the messages may be in the target. The SDK's error types are unexported,
// so they are known by name and by the message it wraps them in.
func checksumMismatch(err error) bool {
	for e := range errorChain(err) {
		switch reflect.TypeOf(e).Name() {
		case "messageChecksumError", "batchMessageChecksumError":
			return true
		}
	}
	return strings.Contains(err.Error(), "message checksum validation failed")
}

// errorChain yields err and every error it wraps, depth first.
func errorChain(err error) func(func(error) bool) {
	return func(yield func(error) bool) {
		var walk func(error) bool
		walk = func(e error) bool {
			if e == nil {
				return true
			}
			if !yield(e) {
				return false
			}
			switch u := e.(type) {
			case interface{ Unwrap() error }:
				return walk(u.Unwrap())
			case interface{ Unwrap() []error }:
				for _, x := range u.Unwrap() {
					if !walk(x) {
						return false
					}
				}
			}
			return true
		}
		walk(err)
	}
}

// isThrottle reports a whole call the server refused because of its rate:
// nothing was sent, so it is retried.
func isThrottle(err error) bool {
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		return false
	}
	_, ok := retry.DefaultThrottleErrorCodes[ae.ErrorCode()]
	return ok
}

// sendEntries calls SendMessageBatch, retrying entries (and whole calls)
// that failed through no fault of the sender.
func sendEntries(ctx context.Context, api API, b *batch) sendResult {
	res := sendResult{accepted: map[int]string{}, failed: map[int]error{}, uncertain: map[int]error{}}
	pending := b.entries
	for attempt := 0; len(pending) > 0; attempt++ {
		// A retried entry's earlier failure no longer holds: this call
		// may deliver it, and its reply says what became of it.
		for _, e := range pending {
			delete(res.failed, e.Ord)
		}
		input := &sqs.SendMessageBatchInput{QueueUrl: aws.String(b.target)}
		byID := map[string]entry{}
		for i, e := range pending {
			id := strconv.Itoa(i)
			byID[id] = e
			input.Entries = append(input.Entries, sendEntry(id, b, e))
		}
		out, err := api.SendMessageBatch(ctx, input, SendOnce)
		if err != nil {
			wrapped := fmt.Errorf("send to %s: %w", b.target, err)
			if OutcomeUnknown(err) {
				for _, e := range pending {
					delete(res.failed, e.Ord)
					res.uncertain[e.Ord] = fmt.Errorf("no reply, the message may be in the target already: %w", wrapped)
				}
				return res
			}
			for _, e := range pending {
				res.failed[e.Ord] = wrapped
			}
			if attempt < 2 && isThrottle(err) {
				sleep(ctx, time.Duration(200<<attempt)*time.Millisecond)
				continue
			}
			res.callErr = err
			return res
		}
		for _, s := range out.Successful {
			if e, ok := byID[aws.ToString(s.Id)]; ok {
				res.accepted[e.Ord] = aws.ToString(s.MessageId)
				delete(res.failed, e.Ord)
			}
		}
		var retry []entry
		for _, f := range out.Failed {
			e, ok := byID[aws.ToString(f.Id)]
			if !ok {
				continue
			}
			ferr := fmt.Errorf("send to %s: %w", b.target, &EntryError{Code: aws.ToString(f.Code), Message: aws.ToString(f.Message), SenderFault: f.SenderFault})
			if _, both := res.accepted[e.Ord]; both {
				// Listed as both sent and failed: not confirmed, so it is
				// kept in the source, and may be in the target too.
				delete(res.accepted, e.Ord)
				res.uncertain[e.Ord] = fmt.Errorf("listed as both sent and failed: %w", ferr)
				continue
			}
			res.failed[e.Ord] = ferr
			if !f.SenderFault {
				retry = append(retry, e)
			}
		}
		// An entry in neither list was not confirmed: it stays in the
		// source, and may be in the target too.
		for id, e := range byID {
			_, ok := res.accepted[e.Ord]
			_, bad := res.failed[e.Ord]
			_, unsure := res.uncertain[e.Ord]
			if !ok && !bad && !unsure {
				res.uncertain[e.Ord] = fmt.Errorf("send to %s: entry %s missing from the SendMessageBatch response", b.target, id)
			}
		}
		if attempt == 2 || len(retry) == 0 {
			break
		}
		pending = retry
		sleep(ctx, time.Duration(200<<attempt)*time.Millisecond)
	}
	return res
}

func sendEntry(id string, b *batch, e entry) types.SendMessageBatchRequestEntry {
	m := e.Msg
	out := types.SendMessageBatchRequestEntry{
		Id:                aws.String(id),
		MessageBody:       aws.String(m.Body),
		MessageAttributes: m.sendAttributes(),
	}
	if e.route.Park && e.route.Delay > 0 {
		out.DelaySeconds = e.route.Delay
	}
	if IsFIFO(b.target) {
		group := m.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)]
		if group == "" {
			group = m.MessageID // no group to keep: each message its own, never one shared group
		}
		out.MessageGroupId = aws.String(group)
		out.MessageDeduplicationId = aws.String(DedupID(m.MessageID))
	}
	return out
}

// MoveAttributes are the system attributes a replay uses (sendEntry): a
// scan that only replays receives these, not all of them.
var MoveAttributes = []types.MessageSystemAttributeName{types.MessageSystemAttributeNameMessageGroupId}

// DedupID is the deterministic FIFO deduplication id of a replayed message:
// a re-run within the five-minute deduplication interval is a no-op.
func DedupID(messageID string) string {
	sum := sha256.Sum256([]byte("deadletter-replay:" + messageID))
	return hex.EncodeToString(sum[:20])
}

// deleteDuplicates removes from the source messages an earlier run already
// moved (the journal says so).
func (r *Replayer) deleteDuplicates(ctx context.Context, refs []Ref) {
	failed := r.Hold.Delete(context.WithoutCancel(ctx), refs)
	r.stopOnRefusedDelete(failed)
	for _, ref := range refs {
		res := Result{Ord: ref.Ord, Msg: ref.Msg, Outcome: OutcomeSkippedDuplicate}
		if err, bad := failed[ref.Ord]; bad {
			res.DeleteFailed = err
			_ = r.Journal.Write(Event{Event: EvDeleteFailed, ID: ref.Msg.MessageID, Error: err.Error()})
		} else {
			_ = r.Journal.Write(Event{Event: EvSkippedDuplicate, ID: ref.Msg.MessageID})
		}
		r.emit(res)
	}
}
