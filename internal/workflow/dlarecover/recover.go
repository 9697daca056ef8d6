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

// Object is one object's outcome (a line of `dla recover -o ndjson`).
type Object struct {
	Type         string                    `json:"type"`
	Key          string                    `json:"key"`
	KeyBase64    *string                   `json:"key_base64,omitempty"` // the key's bytes when they are not UTF-8
	Result       string                    `json:"result"`               // written, dropped, failed, unreadable, left
	Action       string                    `json:"action"`               // deleted, moved, kept, left, none
	MovedTo      string                    `json:"moved_to,omitempty"`
	Error        string                    `json:"error,omitempty"`
	ErrorClass   string                    `json:"error_class,omitempty"`
	ExecutionArn string                    `json:"execution_arn,omitempty"`
	Status       string                    `json:"status,omitempty"`
	Source       string                    `json:"message_source,omitempty"`
	Execution    string                    `json:"execution,omitempty"`
	Pdr          string                    `json:"pdr,omitempty"`
	Granules     []recovery.GranuleOutcome `json:"granules,omitempty"`
	Warnings     []string                  `json:"warnings,omitempty"`
	// Published counts the SNS notifications published for this object
	// (in a dry run, that would have been).
	Published *recovery.PublishCounts `json:"sns_published,omitempty"`
	DryRun    bool                    `json:"dry_run,omitempty"`
	res       *recovery.Result
	seq       int                     // its place in the selection
	skipped   bool                    // fed ahead, not started: the run stopped
	held      []recovery.Notification // notifications to publish before the archive action
}

// Summary sums a run (the summary record of `dla recover`).
type Summary struct {
	Type            string     `json:"type"`
	DryRun          bool       `json:"dry_run"`
	Keep            bool       `json:"keep"`
	Database        string     `json:"database"`
	Schema          string     `json:"schema"` // the Cumulus schema generation read from the catalog (v21, v22.0, v22.2, v22.3)
	Selected        int        `json:"selected"`
	Processed       int        `json:"processed"`
	Written         int        `json:"written"`
	Dropped         int        `json:"dropped"`
	Failed          int        `json:"failed"`
	Unreadable      int        `json:"unreadable"`
	Left            int        `json:"left"`          // left in place (database/AWS unavailable, read errors)
	NotProcessed    int        `json:"not_processed"` // selected but never reached (a stop or an interrupt)
	LeftAlone       int        `json:"unreadable_left_alone"`
	Deleted         int        `json:"deleted"`
	Moved           int        `json:"moved"`
	Executions      int        `json:"executions_written"`
	Pdrs            int        `json:"pdrs_written"`
	PdrsDropped     int        `json:"pdrs_dropped"`
	GranulesWritten int        `json:"granules_written"`
	GranulesDropped int        `json:"granules_dropped"`
	GranulesFailed  int        `json:"granules_failed"`
	FilesFailed     int        `json:"granules_marked_failed_for_files"`
	NoProcTimes     int        `json:"written_without_processing_times"`
	SNS             SNSSummary `json:"sns"`
	Interrupted     bool       `json:"interrupted"`
	StoppedBy       string     `json:"stopped_by,omitempty"`
	Seconds         float64    `json:"seconds"`
}

// SNSSummary counts the SNS notifications of a run.
type SNSSummary struct {
	// Topics: the Writer had a Notifier (topic ARNs were given).
	Topics bool `json:"topics"`
	// Published: they were sent. False in a dry run, where the counts are
	// what would have been published.
	Published bool `json:"published"`
	recovery.PublishCounts
	// PossibleDuplicates counts the publish attempts whose reply was lost
	// (no reply, or a server error): SNS may have delivered each one as well
	// as what is counted as published, so a topic received at least the
	// published count and at most that plus these. The SDK retries such an
	// attempt (a duplicate if the first got through); an object whose
	// publish failed so is left, and a re-run publishes again.
	PossibleDuplicates recovery.PublishCounts `json:"possible_duplicates"`
}

// Unconfirmed is implemented by a Notifier that counts its publish
// attempts of unknown outcome (snspub.Publisher).
type Unconfirmed interface {
	Unconfirmed() recovery.PublishCounts
}

// StoppedError says the run stopped before the end (the database lock was
// lost, the database or AWS became unavailable): what was not reached is
// left in place for a re-run.
type StoppedError struct {
	Err  error
	Left int // objects not processed or left in place
}

func (e *StoppedError) Error() string {
	return fmt.Sprintf("stopped: %v; %d not processed or left in place: re-run to continue", e.Err, e.Left)
}
func (e *StoppedError) Unwrap() error { return e.Err }

// Run recovers a selection.
type Run struct {
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
	Sum      *Summary
	// Objects, when set, holds the selection as the plan read it: the
	// objects are written from it, in its order, instead of being fetched
	// and decoded again (those it marks are fetched again, with scope's
	// settings).
	Objects *ObjectSpool
	// NoPrefetch unwraps and indexes each message in the worker that
	// writes it, publishes its notifications and deletes or moves it in
	// that worker, as before (the benchmark's baseline: dla recover
	// --x-no-prefetch). Otherwise the messages are prepared ahead
	// (unwrapped, indexed, their granules built with their AWS reads:
	// nothing that reads or depends on the database) by goroutines of
	// their own while the workers write the ones before, each object's
	// tail (notifications, then delete or move) runs beside the next
	// writes, and written objects are deleted by a goroutine of their own;
	// the writes, their order and every result are the same.
	NoPrefetch bool

	mu       sync.Mutex
	batcher  *notifyBatcher       // publishes the tails' notifications in batches (nil: one by one)
	deletes  chan []pendingDelete // batches for the background deleter (nil: deleted in place)
	deleted  chan struct{}        // closed when the background deleter is done
	toDelete []pendingDelete
	stopErr  error
	// What the deletes could not do: written objects still in place, the
	// failed calls, and the first call's error.
	undeleted, delFailures int
	firstDelErr            error
}

type workItem struct {
	seq  int
	key  string
	d    *dla.Decoded
	err  error     // fetch/decode error
	prep *prepared // the message prepared ahead (nil: prepare it when writing)
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
	ahead *recovery.Prepared // its granules built ahead (nil: built as it is written)
	err   error              // Unwrap's
}

// prefetches reports whether each message is prepared ahead of its
// write: unwrapped (reading a failed execution's history), indexed, and
// its granules built (reading the processing times, CMR files and file
// sizes), by goroutines of their own, aheadOf(Concurrency) messages ahead
// of the writes, while the workers write the ones before.
func (r *Run) prefetches() bool { return !r.NoPrefetch }

// aheadOf is how many messages are prepared ahead of the writes at once.
func aheadOf(concurrency int) int { return max(4, 2*concurrency) }

// prepare unwraps a decoded object to its Cumulus message and indexes it:
// the part of WriteMessage that neither reads nor depends on the database.
// ahead, it also builds its granules (Writer.Prepare).
func prepare(ctx context.Context, w *recovery.Writer, d *dla.Decoded, ahead bool) *prepared {
	msg, err := recovery.Unwrap(ctx, d, w.SFN, w.Objects)
	p := &prepared{msg: msg, err: err}
	if err == nil {
		p.idx = w.Index(msg.JSON)
		if ahead {
			p.ahead = w.Prepare(ctx, p.idx)
		}
	}
	return p
}

// Run recovers every object of scope (its Keys or KeyStream), calling emit
// with each object's result in the order they finish. An emit error (stdout
// closed) stops new work; objects in flight finish. The returned error is
// the first of: emit's, a failed batch delete, the context's, a
// *StoppedError, the selection's.
func (r *Run) Run(ctx context.Context, scope selection.Scope, emit func(Object) error) error {
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

	prefetch := r.prefetches()
	var items chan workItem
	if prefetch {
		items = make(chan workItem, aheadOf(r.Concurrency))
	} else {
		items = make(chan workItem)
	}
	results := make(chan Object, r.Concurrency)
	finished := func(res Object) {
		if res.Result == "left" && res.ErrorClass == "Transient" {
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
			for it := range items {
				if it.ahead != nil {
					<-it.ahead.done
					it.prep = it.ahead.p
				}
				if runCtx.Err() != nil {
					// Stopped: what was fed ahead is not started.
					results <- Object{seq: it.seq, skipped: true}
					continue
				}
				res, tail := r.process(workCtx, it)
				if tail == nil {
					finished(res)
					continue
				}
				tails <- struct{}{}
				tailWG.Add(1)
				go func() {
					defer tailWG.Done()
					tail(&res)
					// Its place is given back once its result was taken:
					// results not taken (stdout stalled) hold the tails,
					// and the tails the workers.
					finished(res)
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
				r.count(res)
				if r.Progress != nil {
					r.Progress(r.Sum)
				}
				if outErr == nil {
					if outErr = emit(res); outErr != nil {
						stop() // stdout is gone: start nothing new, finish what is in flight
					}
				}
			}
		}
	}()
	if !r.NoPrefetch && !r.DryRun && !r.Keep {
		r.deletes, r.deleted = make(chan []pendingDelete, 1), make(chan struct{})
		go func() {
			defer close(r.deleted)
			for batch := range r.deletes {
				_ = r.deleteKeys(workCtx, batch)
			}
		}()
	}
	seq := 0
	preparing := make(chan struct{}, aheadOf(r.Concurrency))
	feed := func(sr selection.Result) error {
		select {
		case window <- struct{}{}: // given back when its result is taken
		case <-runCtx.Done():
			return runCtx.Err()
		}
		it := workItem{seq: seq, key: sr.Entry.Key, d: sr.Decoded, err: sr.Err}
		if prefetch && it.err == nil && it.d != nil {
			// Prepared by a goroutine of its own while the workers write
			// the ones before; the worker waits for it.
			select {
			case preparing <- struct{}{}:
			case <-runCtx.Done():
				<-window
				return runCtx.Err()
			}
			a := &ahead{done: make(chan struct{})}
			it.ahead = a
			go func(d *dla.Decoded) {
				defer func() { <-preparing }()
				a.p = prepare(workCtx, r.Writer, d, true)
				close(a.done)
			}(it.d)
		}
		select {
		case items <- it:
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
		selErr = r.Objects.Replay(runCtx, func(key string, d *dla.Decoded) error {
			if d != nil {
				return feed(selection.Result{Entry: archive.Entry{Key: key}, Decoded: d})
			}
			one := scope
			one.Keys, one.KeyStream = []string{key}, nil
			_, err := selection.Run(runCtx, r.Store, one, 1, feed)
			return err
		})
	} else {
		_, selErr = selection.Run(runCtx, r.Store, scope, min(r.Concurrency*2, 64), feed)
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

func (r *Run) explain(err error) string {
	if r.Explain != nil {
		return r.Explain(err)
	}
	return err.Error()
}

func (r *Run) stopWith(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopErr == nil {
		r.stopErr = err
	}
}

// deferTails reports whether an object's tail (publishing its
// notifications, deleting or moving it) runs beside the next objects'
// writes. The baseline (NoPrefetch) and a dry run (which publishes, deletes
// and moves nothing) finish each object before the next.
func (r *Run) deferTails() bool { return !r.NoPrefetch && !r.DryRun }

// tailsInFlight bounds the tails running at once.
func tailsInFlight(concurrency int) int { return max(16, 4*concurrency) }

// resultsAhead bounds the objects fed whose result has not had its turn
// (counted and emitted in the selection's order): those fed ahead, those
// being written, the tails in flight and the results handed over. It binds
// only when one of them is held (a tail that hangs, a stdout that takes no
// line).
func resultsAhead(concurrency int) int {
	return aheadOf(concurrency) + tailsInFlight(concurrency) + 2*concurrency
}

// process writes one object. It acts on the archive too, or returns the
// function that does (the tail: publish what the write held, then delete
// or move the object), to be run beside the next writes.
func (r *Run) process(ctx context.Context, it workItem) (Object, func(*Object)) {
	o := Object{Type: "object", Key: it.key, KeyBase64: dla.KeyBase64(it.key), DryRun: r.DryRun, seq: it.seq}
	if it.err != nil && !dla.IsDecodeError(it.err) {
		// The object could not be fetched: nothing is known of it.
		o.Result, o.Action, o.Error, o.ErrorClass = "left", "left", r.explain(it.err), "ReadError"
		return o, nil
	}
	d := it.d
	if it.err != nil && (d == nil || len(d.Layers) == 0) {
		o.Result, o.Error, o.ErrorClass = "unreadable", it.err.Error(), "Unreadable"
		if r.LeaveUnreadable {
			o.Action = "left"
			return o, nil
		}
		return r.tail(&o, func(o *Object) { r.move(ctx, o, d) })
	}
	o.ExecutionArn, o.Status = d.ExecutionArn, d.Status
	var werr error
	if it.err != nil {
		werr = &recovery.UnwrapError{Reason: it.err.Error()}
	} else {
		werr = r.write(ctx, d, it.prep, &o)
	}
	if werr != nil && recovery.IsTransient(werr) {
		o.Result, o.Action, o.Error, o.ErrorClass = "left", "left", r.explain(werr), "Transient"
		if len(o.held) == 0 {
			return o, nil
		}
		// What was written before the failure is announced, as it would
		// have been had each notification been sent after its write.
		return r.tail(&o, func(o *Object) { r.publishHeld(ctx, o) })
	}
	return r.tail(&o, func(o *Object) {
		if !r.publishHeld(ctx, o) {
			return
		}
		if werr == nil {
			o.Result = o.res.Outcome()
			r.remove(ctx, o, d)
			return
		}
		o.Result, o.Error, o.ErrorClass = "failed", werr.Error(), recovery.Class(werr)
		r.move(ctx, o, d)
	})
}

// tail runs fn on o now, or returns it to run beside the next writes.
func (r *Run) tail(o *Object, fn func(*Object)) (Object, func(*Object)) {
	if r.deferTails() {
		return *o, fn
	}
	fn(o)
	return *o, nil
}

// publishHeld publishes the notifications the object's write held, and
// counts them in its sns_published. When one fails the object is left in
// place (a re-run writes and publishes again) and false is returned.
func (r *Run) publishHeld(ctx context.Context, o *Object) bool {
	if len(o.held) == 0 {
		return true
	}
	held := o.held
	o.held = nil
	var n recovery.PublishCounts
	var err error
	if r.batcher != nil {
		n, err = r.batcher.publish(held)
	} else {
		n, err = recovery.PublishAll(ctx, r.Writer.Notifier, held)
	}
	o.Published = nil
	if n != (recovery.PublishCounts{}) {
		o.Published = &n
	}
	if err == nil {
		return true
	}
	if o.Result != "left" {
		o.Result, o.Action, o.Error, o.ErrorClass = "left", "left", r.explain(err), "Transient"
	}
	return false
}

// Written is what WriteMessage did with one message.
type Written struct {
	Message *recovery.Message // the unwrapped Cumulus message (nil when unwrapping failed)
	Result  *recovery.Result  // the writes (nil when nothing was attempted)
}

// writePrepared is WriteMessage of a message prepared already.
func writePrepared(ctx context.Context, w *recovery.Writer, p *prepared) (Written, error) {
	if p.err != nil {
		return Written{}, p.err
	}
	res, err := w.WriteMsg(ctx, p.idx, p.ahead)
	return Written{Message: p.msg, Result: res}, err
}

func (r *Run) write(ctx context.Context, d *dla.Decoded, p *prepared, o *Object) error {
	w := *r.Writer
	if r.DryRun && w.Notifier != nil {
		// Nothing is ever published in a dry run; the notifications are
		// built from the rolled-back rows and counted, and checked as the
		// run will check them (a message SNS cannot take fails).
		d := recovery.DiscardNotifier{}
		if c, ok := w.Notifier.(recovery.Checker); ok {
			d.Check = c.Check
		}
		w.Notifier = d
	}
	var held *recovery.Deferred
	if r.deferTails() && w.Notifier != nil {
		held = &recovery.Deferred{}
		if c, ok := w.Notifier.(recovery.Checker); ok {
			held.Check = c.Check
		}
		w.Notifier = held
	}
	if r.DryRun {
		t, err := r.Pool.Begin(ctx)
		if err != nil {
			return cumulusdb.Classify(err)
		}
		defer t.Rollback(ctx)
		w.DB = r.DB.InTx(t)
	} else {
		w.DB = r.DB
	}
	if p == nil {
		p = prepare(ctx, &w, d, false)
	}
	wr, err := writePrepared(ctx, &w, p)
	if held != nil {
		o.held = held.Held()
	}
	if wr.Message != nil {
		o.Source, o.Warnings = wr.Message.Source, wr.Message.Warnings
	}
	o.res = wr.Result
	if res := wr.Result; res != nil {
		o.Execution, o.Pdr, o.Granules, o.Published = res.Execution, res.Pdr, res.Granules, res.Published
		o.Warnings = append(o.Warnings, res.Warnings...)
		if o.ExecutionArn == "" {
			o.ExecutionArn = res.ExecutionArn
		}
	}
	return err
}

// deleteBatch is how many written objects are deleted at once.
var deleteBatch = 1000

// pendingDelete is a written object to delete: with the digest of the
// bytes that were written, it is deleted only while it still holds them.
type pendingDelete struct {
	key     string
	sum     [16]byte
	checked bool // sum is set
}

// deleteConcurrency bounds the conditional deletes of one batch in flight.
const deleteConcurrency = 16

// remove deletes a written object (batched), unless --keep or --dry-run.
func (r *Run) remove(ctx context.Context, o *Object, d *dla.Decoded) {
	switch {
	case r.DryRun:
		o.Action = "would delete"
	case r.Keep:
		o.Action = "kept"
	default:
		o.Action = "deleted"
		r.mu.Lock()
		pd := pendingDelete{key: o.Key}
		if d != nil && d.HasDigest {
			pd.sum, pd.checked = d.Digest, true
		}
		r.toDelete = append(r.toDelete, pd)
		full := len(r.toDelete) >= deleteBatch
		var batch []pendingDelete
		if full && r.deletes != nil {
			batch, r.toDelete = r.toDelete, nil
		}
		r.mu.Unlock()
		switch {
		case batch != nil:
			r.deletes <- batch // deleted by the background deleter
		case full:
			_ = r.flushDeletes(ctx)
		}
	}
}

// flushDeletes deletes the written objects gathered so far.
func (r *Run) flushDeletes(ctx context.Context) error {
	r.mu.Lock()
	batch := r.toDelete
	r.toDelete = nil
	r.mu.Unlock()
	return r.deleteKeys(ctx, batch)
}

// deleteKeys deletes written objects: each one whose digest is known only
// while it still holds the bytes that were written (an object rewritten
// since the plan read it holds a message nobody wrote: it stays), the
// others, if any, in one batch.
func (r *Run) deleteKeys(ctx context.Context, batch []pendingDelete) error {
	var keys []string
	var checked []pendingDelete
	for _, pd := range batch {
		if pd.checked {
			checked = append(checked, pd)
		} else {
			keys = append(keys, pd.key)
		}
	}
	errChecked := r.deleteChecked(ctx, checked)
	if err := r.deleteUnchecked(ctx, keys); err != nil {
		return err
	}
	return errChecked
}

// deleteChecked deletes written objects, each only while the MD5 of its
// bytes is the one written, deleteConcurrency at a time.
func (r *Run) deleteChecked(ctx context.Context, batch []pendingDelete) error {
	if len(batch) == 0 {
		return nil
	}
	errs := make([]error, len(batch))
	sem := make(chan struct{}, deleteConcurrency)
	var wg sync.WaitGroup
	for i, pd := range batch {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			errs[i] = archive.RemoveIfDigest(ctx, r.Store, pd.key, pd.sum)
		}()
	}
	wg.Wait()
	left := 0
	for i, err := range errs {
		switch {
		case err == nil || errors.Is(err, archive.ErrNotFound):
			// Deleted, or gone already: nothing is left in place.
		case errors.Is(err, archive.ErrChanged):
			r.Warnf("written but not deleted %s: it was rewritten since it was read, and what it holds now was not written (a re-run writes it)", batch[i].key)
			left++
		default:
			r.Warnf("written but not deleted %s: %v", batch[i].key, err)
			left++
		}
	}
	r.mu.Lock()
	r.Sum.Deleted += len(batch) - left
	r.mu.Unlock()
	if left > 0 {
		what := writtenObjects(left)
		err := fmt.Errorf("%s could not be deleted (a re-run rewrites them harmlessly)", what)
		r.deleteFailed(left, err)
		return err
	}
	return nil
}

// deleteUnchecked deletes written objects whose digest is unknown.
func (r *Run) deleteUnchecked(ctx context.Context, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	failed, err := r.Store.DeleteMany(ctx, keys)
	if err != nil {
		for _, k := range keys {
			r.Warnf("written but not deleted %s: %v", k, err)
		}
		err = fmt.Errorf("deleting %d written objects (they stay in place; a re-run rewrites them harmlessly): %w", len(keys), err)
		r.deleteFailed(len(keys), err)
		return err
	}
	r.mu.Lock()
	r.Sum.Deleted += len(keys) - len(failed)
	r.mu.Unlock()
	if len(failed) > 0 {
		for k, e := range failed {
			r.Warnf("written but not deleted %s: %v", k, e)
		}
		what := writtenObjects(len(failed))
		err := fmt.Errorf("%s could not be deleted (a re-run rewrites them harmlessly)", what)
		r.deleteFailed(len(failed), err)
		return err
	}
	return nil
}

// writtenObjects counts written objects in words: "1 written object",
// "2 written objects".
func writtenObjects(n int) string {
	if n == 1 {
		return "1 written object"
	}
	return fmt.Sprintf("%d written objects", n)
}

// deleteFailed records a delete call that left n written objects in place.
func (r *Run) deleteFailed(n int, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.undeleted += n
	r.delFailures++
	if r.firstDelErr == nil {
		r.firstDelErr = err
	}
}

// move copies a failed object to failed-sqs/<date>/<name> (or <name>.1 ...
// when that name is taken by another object), then deletes the original
// only once the copy is confirmed to hold the same bytes.
func (r *Run) move(ctx context.Context, o *Object, d *dla.Decoded) {
	eventTime := ""
	if d != nil {
		eventTime = d.Time
	}
	dst := r.Layout.FailedKey(o.Key, eventTime, r.Now())
	switch {
	case r.DryRun:
		o.Action, o.MovedTo = "would move", dst
		return
	case r.Keep:
		o.Action = "kept"
		return
	}
	moved, err := archive.Move(ctx, r.Store, o.Key, dst)
	switch {
	case errors.Is(err, archive.ErrSelfCopy):
		o.Action = "left" // already in failed-sqs under its date
		o.MovedTo = dst
		return
	case err != nil && moved != "":
		o.Action, o.MovedTo = "copied", moved
		o.Error += fmt.Sprintf(" (%v)", err)
		return
	case err != nil:
		o.Action = "left"
		o.Error += fmt.Sprintf(" (and the move to %s failed, so it stays in place: %v)", dst, err)
		return
	}
	o.Action, o.MovedTo = "moved", moved
	r.mu.Lock()
	r.Sum.Moved++
	r.mu.Unlock()
}

// count adds one object's result to the summary.
func (r *Run) count(o Object) {
	s := r.Sum
	s.Processed++
	result := o.Result
	if (result == recovery.Failed || result == "unreadable") && (o.Action == "left" || o.Action == "copied") {
		result = "left" // its move failed: it is still where it was
	}
	switch result {
	case recovery.Written:
		s.Written++
	case recovery.Dropped:
		s.Dropped++
	case recovery.Failed:
		s.Failed++
	case "unreadable":
		s.Unreadable++
	case "left":
		s.Left++
		s.Processed--
	}
	if o.Execution == recovery.Written {
		s.Executions++
	}
	switch o.Pdr {
	case recovery.Written:
		s.Pdrs++
	case recovery.Dropped:
		s.PdrsDropped++
	}
	for _, g := range o.Granules {
		switch g.Outcome {
		case recovery.Written:
			s.GranulesWritten++
		case recovery.Dropped:
			s.GranulesDropped++
		case recovery.Failed:
			s.GranulesFailed++
		}
		if g.FilesError != "" {
			s.FilesFailed++
		}
	}
	if p := o.Published; p != nil {
		s.SNS.Execution += p.Execution
		s.SNS.Granule += p.Granule
		s.SNS.Pdr += p.Pdr
	}
	if o.res != nil && o.res.DescribeCalled && !o.res.ProcessingTimes && (o.Result == recovery.Written || o.Result == recovery.Dropped) {
		s.NoProcTimes++
	}
}
