package sqsmove

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
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
	// begun: the run event is written; a later Run (a replay that reads on
	// past SQS's in-flight limit) goes on in the same journal run.
	begun      bool
	maxEntries int
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
// event; it returns the most entries a batch may have. Called again (Run
// once more), it keeps all that and writes no second run event: a resume
// would take a second one for a run that was interrupted.
func (r *Replayer) begin() (int, error) {
	if r.begun {
		return r.maxEntries, nil
	}
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
	if err := r.Journal.Write(Event{Event: EvRun, Target: r.Source, Info: r.RunInfo}); err != nil {
		return maxEntries, err
	}
	r.begun, r.maxEntries = true, maxEntries
	return maxEntries, nil
}

// Run replays every held message that routes somewhere. Messages that
// route nowhere, fail or are abandoned stay held; the caller releases them.
// It returns an error only for what stops the whole run (the journal cannot
// be written, the credentials are refused).
//
// Run may be called again once it returned, after more messages were
// received into the Hold (a replay that reads on past SQS's in-flight
// limit): it replays the messages held since (every earlier one is done,
// or still held because it failed: the caller reads on only when none
// is), in the same journal run, and the counts it returns go on adding up.
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
