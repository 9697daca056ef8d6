package dlarecover

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/recovery"
	"github.com/deadletter/deadletter/internal/selection"
)

// scopeRun is one runScope's pipeline: the channels between its stages
// and what they report at the end.
type scopeRun struct {
	r     *recoverRun
	emit  func(Object) error
	start time.Time
	clock *stageClock
	// Writes and archive actions run on workCtx, which an interrupt does
	// not cancel: objects in flight finish; nothing new starts (runCtx).
	workCtx context.Context
	runCtx  context.Context
	stop    context.CancelFunc

	items   chan workItem // fed to the workers
	results chan Object   // finished objects, out of order
	// tails bounds the tails running beside the next writes, each until
	// its result is taken.
	tails chan struct{}
	// window bounds the objects fed but not yet emitted: one whose tail
	// hangs (an S3 request that never returns) or a stdout that takes no
	// line holds the run back, instead of the run going through the
	// whole selection with none of its lines emitted.
	window chan struct{}
	// preparing bounds the messages being prepared ahead.
	preparing chan struct{}
	seq       int // the next object's place in the selection

	workers, tailWG sync.WaitGroup
	emitted         chan struct{} // closed when every result was emitted
	outErr          error         // emit's first error
}

func newScopeRun(ctx context.Context, r *recoverRun, emit func(Object) error) *scopeRun {
	s := &scopeRun{r: r, emit: emit, start: time.Now(), clock: newStageClock(),
		workCtx:   context.WithoutCancel(ctx),
		items:     make(chan workItem, aheadOf(r.Concurrency)),
		results:   make(chan Object, r.Concurrency),
		tails:     make(chan struct{}, tailsInFlight(r.Concurrency)),
		window:    make(chan struct{}, resultsAhead(r.Concurrency)),
		preparing: make(chan struct{}, aheadOf(r.Concurrency)),
		emitted:   make(chan struct{}),
	}
	s.runCtx, s.stop = context.WithCancel(ctx)
	if bn, ok := r.Writer.Notifier.(recovery.BatchNotifier); ok && r.deferTails() {
		r.batcher = newNotifyBatcher(s.workCtx, bn)
	}
	return s
}

// watchLock stops the run when the archive lock is lost.
func (s *scopeRun) watchLock() {
	r := s.r
	if r.Lock == nil {
		return
	}
	go func() {
		select {
		case <-r.Lock.Lost():
			r.stopWith(r.Lock.Err())
			s.stop()
		case <-s.runCtx.Done():
		}
	}()
}

// finished hands an object's result to the emitter. An object left in
// place by a transient error (the database went away) stops the run.
func (s *scopeRun) finished(res Object) {
	if res.Result == ResultLeft && res.ErrorClass == "Transient" {
		s.r.stopWith(errors.New(res.Error))
		s.stop()
	}
	s.results <- res
}

// work starts Concurrency workers, each writing one object at a time.
func (s *scopeRun) work() {
	for range s.r.Concurrency {
		s.workers.Add(1)
		go func() {
			defer s.workers.Done()
			for {
				t0 := s.clock.start()
				it, ok := <-s.items
				if !ok {
					return
				}
				s.clock.add(stWorkerWaitItem, t0)
				s.writeOne(it)
			}
		}()
	}
}

// writeOne writes one object, then runs its tail beside the next writes
// (tailsInFlight at most), or hands its result on when it has none.
func (s *scopeRun) writeOne(it workItem) {
	r, clock := s.r, s.clock
	if it.ahead != nil {
		t0 := clock.start()
		<-it.ahead.done
		clock.add(stWorkerWaitPrepare, t0)
		it.prep = it.ahead.p
	}
	if s.runCtx.Err() != nil {
		// Stopped: what was fed ahead is not started.
		s.results <- Object{seq: it.seq, skipped: true}
		return
	}
	t0 := clock.start()
	res, tail := r.process(s.workCtx, it)
	clock.add(stWorkerProcess, t0)
	if tail == nil {
		r.acted(s.workCtx, &res)
		s.finished(res)
		return
	}
	t0 = clock.start()
	s.tails <- struct{}{}
	clock.add(stWorkerWaitTail, t0)
	s.tailWG.Add(1)
	go func() {
		defer s.tailWG.Done()
		t0 := clock.start()
		tail(&res)
		clock.add(stTail, t0)
		r.acted(s.workCtx, &res)
		// Its place is given back once its result was taken: results not
		// taken (stdout stalled) hold the tails, and the tails the workers.
		t0 = clock.start()
		s.finished(res)
		clock.add(stTailWaitResult, t0)
		<-s.tails
	}()
}

// emitInOrder counts and emits the results in the selection's order, as
// they were when each object finished before the next began.
func (s *scopeRun) emitInOrder() {
	r, clock := s.r, s.clock
	go func() {
		defer close(s.emitted)
		early := map[int]Object{}
		next := 0
		for res := range s.results {
			early[res.seq] = res
			for {
				res, ok := early[next]
				if !ok {
					break
				}
				delete(early, next)
				next++
				<-s.window
				if res.skipped {
					continue
				}
				// A written object's line says what its delete did, once
				// that delete returned.
				t0 := clock.start()
				r.settle(s.workCtx, &res)
				clock.add(stEmitSettle, t0)
				if !res.reported && r.Acted != nil && !r.DryRun {
					res.reported = true
					r.Acted(res)
				}
				r.count(res)
				if r.Progress != nil {
					r.Progress(r.Sum)
				}
				if s.outErr == nil {
					t0 = clock.start()
					s.outErr = s.emit(res)
					clock.add(stEmit, t0)
					if s.outErr != nil {
						s.stop() // stdout is gone: start nothing new, finish what is in flight
					}
				}
			}
		}
	}()
}

// deleteBehind starts the goroutine that deletes written objects in
// batches, unless nothing is to be deleted (a dry run, Keep).
func (s *scopeRun) deleteBehind() {
	r := s.r
	if r.DryRun || r.Keep {
		return
	}
	r.deletes, r.deleted = make(chan []*pendingDelete, 1), make(chan struct{})
	go func() {
		defer close(r.deleted)
		for batch := range r.deletes {
			_ = r.deleteKeys(s.workCtx, batch)
		}
	}()
}

// feed reads the selection (from the plan's spool when there is one) and
// feeds each object to the workers; it returns the selection's error.
func (s *scopeRun) feed(scope selection.Scope) error {
	r := s.r
	if r.Objects != nil {
		return r.Objects.replay(s.runCtx, func(key string, d *dla.Decoded, read bool) error {
			if d != nil {
				return s.feedOne(selection.Result{Entry: archive.Entry{Key: key}, Decoded: d}, true)
			}
			one := scope
			one.Keys, one.KeyStream = []string{key}, nil
			_, err := selection.Run(s.runCtx, r.Store, one, 1, func(sr selection.Result) error { return s.feedOne(sr, read) })
			return err
		})
	}
	// The keys alone were spooled: whether the plan read an object is not
	// known here.
	_, err := selection.Run(s.runCtx, r.Store, scope, min(r.Concurrency*2, 64), func(sr selection.Result) error { return s.feedOne(sr, false) })
	return err
}

// feedOne takes a place in the window, starts preparing the message by a
// goroutine of its own (the worker waits for it) and hands the object to
// a worker. read: the plan read its bytes.
func (s *scopeRun) feedOne(sr selection.Result, read bool) error {
	r, clock := s.r, s.clock
	t0 := clock.start()
	select {
	case s.window <- struct{}{}: // given back when its result is taken
	case <-s.runCtx.Done():
		return s.runCtx.Err()
	}
	clock.add(stFeedWaitWindow, t0)
	it := workItem{seq: s.seq, key: sr.Entry.Key, d: sr.Decoded, err: sr.Err, read: read}
	if it.err == nil && it.d != nil {
		t0 = clock.start()
		select {
		case s.preparing <- struct{}{}:
		case <-s.runCtx.Done():
			<-s.window
			return s.runCtx.Err()
		}
		clock.add(stFeedWaitPrepare, t0)
		a := &ahead{done: make(chan struct{})}
		it.ahead = a
		go func(d *dla.Decoded) {
			defer func() { <-s.preparing }()
			t0 := clock.start()
			a.p = prepare(s.workCtx, r.Writer, d)
			clock.add(stPrepare, t0)
			close(a.done)
		}(it.d)
	}
	t0 = clock.start()
	select {
	case s.items <- it:
		clock.add(stFeedWaitWorker, t0)
		s.seq++
		return nil
	case <-s.runCtx.Done():
		if it.ahead != nil {
			<-it.ahead.done // its reads end before the run does
		}
		<-s.window
		return s.runCtx.Err()
	}
}

// drain ends the stages once the feed is done: the workers, then the
// tails and the notifications they batched, then the emitter, then the
// deleter.
func (s *scopeRun) drain() {
	r := s.r
	close(s.items)
	s.workers.Wait()
	s.tailWG.Wait()
	if r.batcher != nil {
		r.batcher.close()
	}
	close(s.results)
	<-s.emitted
	if r.deletes != nil {
		close(r.deletes)
		<-r.deleted
	}
}

// finish deletes what is still pending, completes the summary and returns
// the run's error: emit's, a failed delete, the context's, a
// *StoppedError, the selection's (selErr), in that order.
func (s *scopeRun) finish(ctx context.Context, selErr error) error {
	r := s.r
	delErr := r.flushDeletes(s.workCtx)
	if r.delFailures > 1 || delErr == nil && r.firstDelErr != nil {
		// A batch before the last one failed (its error was not returned
		// where it was deleted): say so, or the run would end as if every
		// object reported deleted had been.
		what := writtenObjects(r.undeleted)
		delErr = fmt.Errorf("%s could not be deleted (they stay in place; a re-run rewrites them harmlessly); the first failure: %w", what, r.firstDelErr)
	}
	if u, ok := r.Writer.Notifier.(Unconfirmed); ok && !r.DryRun {
		r.Sum.SNS.PossibleDuplicates = u.Unconfirmed()
	}
	// Processed leaves out the objects left in place, which were reached:
	// not processed is what was never reached, so the two never overlap.
	r.Sum.NotProcessed = r.Sum.Selected - r.Sum.Processed - r.Sum.Left
	r.Sum.Seconds = time.Since(s.start).Seconds()
	if err := s.clock.write(s.start, time.Since(s.start), r.Concurrency); err != nil {
		r.Warnf("%s: %v", StageTimesEnv, err)
	}
	if ctx.Err() != nil {
		r.Sum.Interrupted = true
	}
	if r.stopErr != nil {
		r.Sum.StoppedBy = r.stopErr.Error()
	} else if s.outErr != nil {
		r.Sum.StoppedBy = "stdout was closed; the objects in flight were finished"
	}
	switch {
	case s.outErr != nil:
		return s.outErr
	case delErr != nil:
		return delErr
	case ctx.Err() != nil:
		return ctx.Err()
	case r.stopErr != nil:
		return &StoppedError{Err: r.stopErr, Left: r.Sum.NotProcessed + r.Sum.Left}
	case selErr != nil && !errors.Is(selErr, context.Canceled):
		return selErr
	}
	return nil
}
