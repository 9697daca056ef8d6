package sqsmove

import (
	"context"
	"errors"
	"sync"
)

// A Stream replays messages while the scan that holds them still runs
// (pushdlq replay --yes: nothing waits on a plan). It keeps every rule of
// Run: a message's held record and its batch's send record are in the
// journal and synced before the batch is sent; the first message for each
// target is its canary, sent alone, and nothing else goes to that target
// before the canary's reply; a message is deleted only after its target
// accepted it; the hold's seen-set offers each message once. Messages an
// earlier run moved (Moved) are not supported: a resume replays with Run,
// which deletes what is owed before anything is sent.
//
// Use: Start once the first message to replay is seen (it writes the run
// event and the held records of everything received so far), Offer every
// message received after that, from the scan's callback, and Finish once
// the scan is over.
type Stream struct {
	r          *Replayer
	ctx        context.Context
	work       chan *batch
	wg         sync.WaitGroup
	pending    *batcher
	canary     map[string]bool
	heldIDs    []string
	finished   bool
	maxEntries int
}

// Start begins a streamed replay: it writes the run event, then a held
// record for every message the hold has so far (the caller passes each
// later one to Offer). Route is not used by a Stream: the route comes with
// each Offer.
func (r *Replayer) Start(ctx context.Context) (*Stream, error) {
	if len(r.Moved) > 0 {
		return nil, errors.New("a streamed replay cannot resume a journal; use Run")
	}
	maxEntries, err := r.begin()
	if err != nil {
		return nil, err
	}
	s := &Stream{r: r, ctx: ctx, work: make(chan *batch, r.Concurrency), canary: map[string]bool{},
		pending: &batcher{maxEntries: maxEntries, maxBytes: r.MaxBatchBytes}, maxEntries: maxEntries}
	if err := s.journalHeldSoFar(); err != nil {
		return nil, err
	}
	for range r.Concurrency {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			r.worker(ctx, s.work)
		}()
	}
	return s, nil
}

// journalHeldSoFar writes a held record for every message held so far
// (Held or Extra), and syncs the journal: Start runs before any send.
func (s *Stream) journalHeldSoFar() error {
	if s.r.Hold.api == nil {
		return nil
	}
	err := s.r.Hold.Each(func(_ int, st State, m *Message) error {
		if st == Held || st == Extra {
			s.heldIDs = append(s.heldIDs, m.MessageID)
			if len(s.heldIDs) == 500 {
				return s.writeHeld()
			}
		}
		return nil
	})
	if err = errors.Join(err, s.writeHeld()); err != nil {
		return err
	}
	return s.r.Journal.Sync()
}

// writeHeld writes the held record of the ids gathered so far (buffered:
// the next send record's sync makes it durable before that send). Its
// deadline is taken now, after each of them was received.
func (s *Stream) writeHeld() error {
	if len(s.heldIDs) == 0 {
		return nil
	}
	err := s.r.Journal.Write(Event{Event: EvHeld, IDs: s.heldIDs, Until: s.r.Hold.Deadline()})
	s.heldIDs = s.heldIDs[:0]
	if err != nil {
		s.r.setFatal(err)
	}
	return err
}

// flushHeld writes the held ids gathered since the last record: before
// any batch leaves, every message it holds is in the journal as held.
func (s *Stream) flushHeld() {
	_ = s.writeHeld()
}

// Offer takes one message the scan received after Start, with its route
// (the zero Route: it stays held and is released by the caller). It is
// called from the scan's callback, never concurrently; it may block while
// the workers are busy (the scan then waits), and it sends a target's
// canary itself.
func (s *Stream) Offer(ord int, m *Message, rt Route) {
	r := s.r
	if r.Hold.api != nil {
		s.heldIDs = append(s.heldIDs, m.MessageID)
		if len(s.heldIDs) == 500 {
			s.flushHeld()
		}
	}
	target := r.queueOf(rt)
	if target == "" {
		return
	}
	ref := Ref{ord, m}
	switch {
	case r.Hold.State(ord) == Lost:
		r.holdLost(ref, rt)
		return
	case s.ctx.Err() != nil || r.fatalErr() != nil:
		// Left held, and released by the caller: abandoned.
		r.emit(Result{Ord: ord, Msg: m, Route: rt, Outcome: OutcomeAbandoned})
		return
	}
	if err := r.deadTarget(target); err != nil {
		r.emit(Result{Ord: ord, Msg: m, Route: rt, Outcome: OutcomeFailed, Err: err})
		return
	}
	if !s.canary[target] {
		s.canary[target] = true
		s.flushHeld()
		b := &batch{target: target, park: rt.Park, entries: []entry{{ref, rt}}, bytes: m.size()}
		_ = r.send(s.ctx, b, true)
		if len(b.entries) == 0 {
			s.canary[target] = false // not sent: the hold on it was lost; the next message is the canary
		}
		return
	}
	if full := s.pending.add(target, entry{ref, rt}); full != nil {
		s.dispatch(full)
	}
}

func (s *Stream) dispatch(b *batch) {
	if len(b.entries) == 0 {
		return
	}
	if s.ctx.Err() != nil || s.r.fatalErr() != nil {
		s.r.abandon(b)
		return
	}
	s.flushHeld()
	s.work <- b
}

// Flush sends the partial batches now, without waiting for more messages
// for their targets (the scan's OnEmpty: the queue looks drained, and a
// partial batch would otherwise wait for the end of the scan). Like Offer,
// it is called from the scan's callbacks, never concurrently, and may block
// while the workers are busy. A message offered after it starts a new batch.
func (s *Stream) Flush() {
	if s.finished {
		return
	}
	for _, b := range s.pending.take() {
		s.dispatch(b)
	}
}

// Finish sends what is still batched once the scan is over, waits for
// every batch, and returns the counts. The held record of messages the
// scan received after it was told to stop (Extra) is written too.
func (s *Stream) Finish() (Counts, error) {
	r := s.r
	if !s.finished {
		s.finished = true
		if r.Hold.api != nil && r.Hold.extraCount() > 0 {
			_ = r.Hold.Each(func(_ int, st State, m *Message) error {
				if st == Extra {
					s.heldIDs = append(s.heldIDs, m.MessageID)
					if len(s.heldIDs) == 500 {
						return s.writeHeld()
					}
				}
				return nil
			})
			_ = s.writeHeld()
		}
		for _, b := range s.pending.take() {
			s.dispatch(b)
		}
		s.flushHeld()
		close(s.work)
		s.wg.Wait()
	}
	return r.counts, r.fatalErr()
}
