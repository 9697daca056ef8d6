// Package dlarecover is the recover workflow: for each selected archive
// object, re-run Cumulus's database writes (internal/recovery), then delete
// the object when the write succeeded, or move it to
// failed-sqs/<date>/<name> when it failed. `dla recover` calls it; so does
// the db-writer processor, for the write step alone (WriteMessage).
//
// What the workflow guarantees: an object is deleted only after its write
// committed; a failed object is moved (copy, read back, then delete: see
// archive.Move) and never overwrites another; an object whose write could
// not be attempted (database or AWS unavailable, a read error) is left in
// place and counted as left; an interrupt lets the objects in flight finish
// and starts nothing new.
package dlarecover

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/cumulusdb"
	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/recovery"
	"github.com/deadletter/deadletter/internal/selection"
)

// recoverRun is one recover run over a selection: Session.Run's, and DryRun's.
type recoverRun struct {
	Store           archive.Store
	Layout          dla.Layout
	DB              *cumulusdb.DB
	Pool            *pgxpool.Pool // a dry run writes in a transaction of its own, rolled back
	Writer          *recovery.Writer
	Lock            *cumulusdb.ArchiveLock // nil in a dry run
	DryRun          bool
	Keep            bool // write, but keep every archive object
	LeaveUnreadable bool // leave unreadable objects where they are
	Concurrency     int
	Now             func() time.Time
	// Warnf reports what goes wrong outside one object's result (a batch
	// delete that failed for some keys).
	Warnf func(format string, args ...any)
	// Explain is how an error of the environment (an outage, a refusal of
	// AWS or of PostgreSQL) reads in an object's line and in the stop
	// message: the CLI's one line naming the component; err.Error() when
	// nil.
	Explain func(error) string
	// Progress is called after each object's result is counted.
	Progress func(*Summary)
	// Acted, when set, is told of each object's outcome as soon as it is
	// final (its delete or move done), out of the selection's order and
	// from any goroutine: the audit record's items, so that a killed run
	// has recorded every move but those of its last chunk, not also those
	// waiting for their line's turn. Not in a dry run.
	Acted func(Object)
	Sum   *Summary
	// Objects, when set, holds the selection as the plan read it: the
	// objects are written from it, in its order, instead of being fetched
	// and decoded again (those it marks are fetched again, with scope's
	// settings).
	//
	// The messages are prepared ahead (unwrapped, indexed, their granules
	// built with their AWS reads: nothing that reads or depends on the
	// database) by goroutines of their own while the workers write the
	// ones before, each object's tail (notifications, then delete or move)
	// runs beside the next writes, and written objects are deleted by a
	// goroutine of their own; the writes, their order and every result
	// are those of one object after another.
	Objects *ObjectSpool

	inOrder  *inOrderTx // dryRunInOrder's transaction (nil: each message in its own)
	mu       sync.Mutex
	batcher  *notifyBatcher        // publishes the tails' notifications in batches (nil: one by one)
	deletes  chan []*pendingDelete // batches for the background deleter (nil: deleted in place)
	deleted  chan struct{}         // closed when the background deleter is done
	toDelete []*pendingDelete
	stopErr  error
	// What the deletes could not do: written objects still in place, the
	// failed calls, and the first call's error.
	undeleted, delFailures int
	firstDelErr            error
}

type workItem struct {
	seq int
	key string
	d   *dla.Decoded
	err error // fetch/decode error
	// read: the plan read its bytes, so a fetch that finds it gone finds
	// it moved or deleted since (by another run).
	read bool
	prep *prepared // the message prepared ahead
	// ahead, when set, is the message being prepared by a goroutine of
	// its own: prep is taken from it once it is done.
	ahead *ahead
}

// ahead is a message prepared ahead: p is set when done is closed.
type ahead struct {
	done chan struct{}
	p    *prepared
}

// prepared is a message unwrapped and indexed, ready for Writer.WriteMsg.
type prepared struct {
	msg   *recovery.Message
	idx   recovery.Msg
	ahead *recovery.Prepared // its granules built ahead
	err   error              // Unwrap's
}

// aheadOf is how many messages are prepared ahead of the writes at once:
// each is unwrapped (reading a failed execution's history), indexed, and
// its granules built (reading the processing times, CMR files and file
// sizes) by a goroutine of its own while the workers write the ones
// before.
func aheadOf(concurrency int) int { return max(4, 2*concurrency) }

// prepare unwraps a decoded object to its Cumulus message and indexes it:
// the part of WriteMessage that neither reads nor depends on the database,
// its granules built too (Writer.Prepare).
func prepare(ctx context.Context, w *recovery.Writer, d *dla.Decoded) *prepared {
	msg, err := recovery.Unwrap(ctx, d, w.SFN, w.Objects)
	p := &prepared{msg: msg, err: err}
	if err == nil {
		p.idx = recovery.Index(msg.JSON)
		p.ahead = w.Prepare(ctx, p.idx)
	}
	return p
}

// runScope recovers every object of scope (its Keys or KeyStream), calling emit
// with each object's result in the order they finish. An emit error (stdout
// closed) stops new work; objects in flight finish. The returned error is
// the first of: emit's, a failed batch delete, the context's, a
// *StoppedError, the selection's.
func (r *recoverRun) runScope(ctx context.Context, scope selection.Scope, emit func(Object) error) error {
	start := time.Now()
	if r.Concurrency <= 0 {
		r.Concurrency = 1
	}
	if r.Warnf == nil {
		r.Warnf = func(string, ...any) {}
	}
	// Writes and archive actions run on a context that an interrupt does
	// not cancel: objects in flight finish; nothing new starts.
	workCtx := context.WithoutCancel(ctx)
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	if r.Lock != nil {
		go func() {
			select {
			case <-r.Lock.Lost():
				r.stopWith(r.Lock.Err())
				stop()
			case <-runCtx.Done():
			}
		}()
	}

	clock := newStageClock()
	items := make(chan workItem, aheadOf(r.Concurrency))
	results := make(chan Object, r.Concurrency)
	finished := func(res Object) {
		if res.Result == ResultLeft && res.ErrorClass == "Transient" {
			r.stopWith(errors.New(res.Error))
			stop()
		}
		results <- res
	}
	// The tail of an object (publishing its notifications, then deleting
	// or moving it) runs beside the next objects' writes, tailsInFlight
	// at most, each until its result is taken; the writes stay
	// Concurrency at a time.
	tails := make(chan struct{}, tailsInFlight(r.Concurrency))
	if bn, ok := r.Writer.Notifier.(recovery.BatchNotifier); ok && r.deferTails() {
		r.batcher = newNotifyBatcher(workCtx, bn)
	}
	var wg, tailWG sync.WaitGroup
	for range r.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				t0 := clock.start()
				it, ok := <-items
				if !ok {
					break
				}
				clock.add(stWorkerWaitItem, t0)
				if it.ahead != nil {
					t0 = clock.start()
					<-it.ahead.done
					clock.add(stWorkerWaitPrepare, t0)
					it.prep = it.ahead.p
				}
				if runCtx.Err() != nil {
					// Stopped: what was fed ahead is not started.
					results <- Object{seq: it.seq, skipped: true}
					continue
				}
				t0 = clock.start()
				res, tail := r.process(workCtx, it)
				clock.add(stWorkerProcess, t0)
				if tail == nil {
					r.acted(workCtx, &res)
					finished(res)
					continue
				}
				t0 = clock.start()
				tails <- struct{}{}
				clock.add(stWorkerWaitTail, t0)
				tailWG.Add(1)
				go func() {
					defer tailWG.Done()
					t0 := clock.start()
					tail(&res)
					clock.add(stTail, t0)
					r.acted(workCtx, &res)
					// Its place is given back once its result was taken:
					// results not taken (stdout stalled) hold the tails,
					// and the tails the workers.
					t0 = clock.start()
					finished(res)
					clock.add(stTailWaitResult, t0)
					<-tails
				}()
			}
		}()
	}
	// An object is started only while fewer than resultsAhead of those fed
	// before it wait for their result's turn: one whose tail hangs (an
	// S3 request that never returns) or a stdout that takes no line
	// holds the run back, instead of the run going through the whole
	// selection with none of its lines emitted.
	window := make(chan struct{}, resultsAhead(r.Concurrency))
	var outErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Results are counted and emitted in the selection's order, as
		// they were when each object finished before the next began.
		early := map[int]Object{}
		next := 0
		for res := range results {
			early[res.seq] = res
			for {
				res, ok := early[next]
				if !ok {
					break
				}
				delete(early, next)
				next++
				<-window
				if res.skipped {
					continue
				}
				// A written object's line says what its delete did, once
				// that delete returned.
				t0 := clock.start()
				r.settle(workCtx, &res)
				clock.add(stEmitSettle, t0)
				if !res.reported && r.Acted != nil && !r.DryRun {
					res.reported = true
					r.Acted(res)
				}
				r.count(res)
				if r.Progress != nil {
					r.Progress(r.Sum)
				}
				if outErr == nil {
					t0 = clock.start()
					outErr = emit(res)
					clock.add(stEmit, t0)
					if outErr != nil {
						stop() // stdout is gone: start nothing new, finish what is in flight
					}
				}
			}
		}
	}()
	if !r.DryRun && !r.Keep {
		r.deletes, r.deleted = make(chan []*pendingDelete, 1), make(chan struct{})
		go func() {
			defer close(r.deleted)
			for batch := range r.deletes {
				_ = r.deleteKeys(workCtx, batch)
			}
		}()
	}
	seq := 0
	preparing := make(chan struct{}, aheadOf(r.Concurrency))
	feed := func(sr selection.Result, read bool) error {
		t0 := clock.start()
		select {
		case window <- struct{}{}: // given back when its result is taken
		case <-runCtx.Done():
			return runCtx.Err()
		}
		clock.add(stFeedWaitWindow, t0)
		it := workItem{seq: seq, key: sr.Entry.Key, d: sr.Decoded, err: sr.Err, read: read}
		if it.err == nil && it.d != nil {
			// Prepared by a goroutine of its own while the workers write
			// the ones before; the worker waits for it.
			t0 = clock.start()
			select {
			case preparing <- struct{}{}:
			case <-runCtx.Done():
				<-window
				return runCtx.Err()
			}
			clock.add(stFeedWaitPrepare, t0)
			a := &ahead{done: make(chan struct{})}
			it.ahead = a
			go func(d *dla.Decoded) {
				defer func() { <-preparing }()
				t0 := clock.start()
				a.p = prepare(workCtx, r.Writer, d)
				clock.add(stPrepare, t0)
				close(a.done)
			}(it.d)
		}
		t0 = clock.start()
		select {
		case items <- it:
			clock.add(stFeedWaitWorker, t0)
			seq++
			return nil
		case <-runCtx.Done():
			if it.ahead != nil {
				<-it.ahead.done // its reads end before the run does
			}
			<-window
			return runCtx.Err()
		}
	}
	var selErr error
	if r.Objects != nil {
		selErr = r.Objects.replay(runCtx, func(key string, d *dla.Decoded, read bool) error {
			if d != nil {
				return feed(selection.Result{Entry: archive.Entry{Key: key}, Decoded: d}, true)
			}
			one := scope
			one.Keys, one.KeyStream = []string{key}, nil
			_, err := selection.Run(runCtx, r.Store, one, 1, func(sr selection.Result) error { return feed(sr, read) })
			return err
		})
	} else {
		// The keys alone were spooled: whether the plan read an object is
		// not known here.
		_, selErr = selection.Run(runCtx, r.Store, scope, min(r.Concurrency*2, 64), func(sr selection.Result) error { return feed(sr, false) })
	}
	close(items)
	wg.Wait()
	tailWG.Wait()
	if r.batcher != nil {
		r.batcher.close()
	}
	close(results)
	<-done
	if r.deletes != nil {
		close(r.deletes)
		<-r.deleted
	}
	delErr := r.flushDeletes(workCtx)
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
	r.Sum.Seconds = time.Since(start).Seconds()
	if err := clock.write(time.Since(start), r.Concurrency); err != nil {
		r.Warnf("%s: %v", StageTimesEnv, err)
	}
	if ctx.Err() != nil {
		r.Sum.Interrupted = true
	}
	if r.stopErr != nil {
		r.Sum.StoppedBy = r.stopErr.Error()
	} else if outErr != nil {
		r.Sum.StoppedBy = "stdout was closed; the objects in flight were finished"
	}
	switch {
	case outErr != nil:
		return outErr
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

func (r *recoverRun) explain(err error) string {
	if r.Explain != nil {
		return r.Explain(err)
	}
	return err.Error()
}

func (r *recoverRun) stopWith(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopErr == nil {
		r.stopErr = err
	}
}

// acted tells Acted of an object whose outcome is final: no delete
// pending, or one that already returned (a delete issued in the tail).
// One whose delete waits for a batch is told once its line settles it.
func (r *recoverRun) acted(ctx context.Context, o *Object) {
	if r.Acted == nil || r.DryRun || o.skipped {
		return
	}
	if pd := o.pending; pd != nil {
		select {
		case <-pd.done:
			r.settle(ctx, o)
		default:
			return
		}
	}
	o.reported = true
	r.Acted(*o)
}
