package dlarecover

import (
	"context"
	"errors"
	"fmt"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/recovery"
)

// One object: its write, then its tail (its notifications published, then
// its delete or its move to failed-sqs/).

// deferTails reports whether an object's tail (publishing its
// notifications, deleting or moving it) runs beside the next objects'
// writes. A dry run (which publishes, deletes and moves nothing) finishes
// each object before the next.
func (r *recoverRun) deferTails() bool { return !r.DryRun }

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
func (r *recoverRun) process(ctx context.Context, it workItem) (Object, func(*Object)) {
	o := Object{Type: "object", Key: it.key, KeyBase64: dla.KeyBase64(it.key), DryRun: r.DryRun, seq: it.seq}
	if it.err != nil && !dla.IsDecodeError(it.err) {
		if it.read && r.sourceGone(ctx, it.key, it.err) {
			// The plan read it (and could not decode it); it is gone now.
			o.Result, o.Action, o.Error = ResultGone, ActionGone, fmt.Sprintf("%s: it was gone when this run came to read it again", goneNote)
			return o, nil
		}
		// The object could not be fetched: nothing is known of it.
		o.Result, o.Action, o.Error, o.ErrorClass = ResultLeft, ActionLeft, r.explain(it.err), "ReadError"
		return o, nil
	}
	d := it.d
	if it.err != nil && (d == nil || len(d.Layers) == 0) {
		o.Result, o.Error, o.ErrorClass = ResultUnreadable, it.err.Error(), "Unreadable"
		if r.LeaveUnreadable {
			o.Action = ActionLeft
			return o, nil
		}
		return r.tail(&o, func(o *Object) { r.move(ctx, o, d) })
	}
	o.ExecutionArn, o.Status, o.GranuleIDs = d.ExecutionArn, d.Status, d.Granules
	var werr error
	if it.err != nil {
		werr = &recovery.UnwrapError{Reason: it.err.Error()}
	} else {
		werr = r.write(ctx, it.prep, &o)
	}
	if werr != nil && recovery.IsTransient(werr) {
		o.Result, o.Action, o.Error, o.ErrorClass = ResultLeft, ActionLeft, r.explain(werr), "Transient"
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
			o.Result = Result(o.res.Outcome())
			r.remove(ctx, o, d)
			return
		}
		o.Result, o.Error, o.ErrorClass = ResultFailed, werr.Error(), recovery.Class(werr)
		r.move(ctx, o, d)
	})
}

// tail runs fn on o now, or returns it to run beside the next writes.
func (r *recoverRun) tail(o *Object, fn func(*Object)) (Object, func(*Object)) {
	if r.deferTails() {
		return *o, fn
	}
	fn(o)
	return *o, nil
}

// publishHeld publishes the notifications the object's write held, and
// counts them in its sns_published. When one fails the object is left in
// place (a re-run writes and publishes again) and false is returned.
func (r *recoverRun) publishHeld(ctx context.Context, o *Object) bool {
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
	if o.Result != ResultLeft {
		o.Result, o.Action, o.Error, o.ErrorClass = ResultLeft, ActionLeft, r.explain(err), "Transient"
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

func (r *recoverRun) write(ctx context.Context, p *prepared, o *Object) error {
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
		db, end, err := r.dryRunDB(ctx)
		if err != nil {
			return err
		}
		defer end()
		w.DB = db
	} else {
		w.DB = r.DB
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

// move copies a failed object to failed-sqs/<date>/<name> (or <name>.1 ...
// when that name is taken by another object), then deletes the original
// only once the copy is confirmed to hold the same bytes.
func (r *recoverRun) move(ctx context.Context, o *Object, d *dla.Decoded) {
	eventTime := ""
	if d != nil {
		eventTime = d.Time
	}
	dst := r.Layout.FailedKey(o.Key, eventTime, r.Now())
	switch {
	case r.DryRun:
		o.Action, o.MovedTo = ActionWouldMove, dst
		return
	case r.Keep:
		o.Action = ActionKept
		return
	}
	moved, err := archive.Move(ctx, r.Store, o.Key, dst)
	switch {
	case errors.Is(err, archive.ErrSelfCopy):
		o.Action = ActionLeft // already in failed-sqs under its date
		o.MovedTo = dst
		return
	case errors.Is(err, archive.ErrSourceGone) && moved != "":
		// Copied and confirmed, but the original was gone before its
		// delete: another run moved or deleted it meanwhile. This run's
		// copy stays (the other run may have written and deleted it: then
		// this copy is the only one of a message this database failed).
		o.Action, o.MovedTo = ActionGone, moved
		o.Error += fmt.Sprintf(" (%s: it was gone before this run deleted it, after copying it to %s; that copy stays, maybe a second one)", goneNote, moved)
		return
	case err != nil && moved == "" && r.sourceGone(ctx, o.Key, err):
		o.Action = ActionGone
		o.Error += fmt.Sprintf(" (%s: it was gone when this run came to move it to %s)", goneNote, dst)
		return
	case err != nil && moved != "":
		o.Action, o.MovedTo = ActionCopied, moved
		o.Error += fmt.Sprintf(" (%v)", err)
		return
	case err != nil:
		o.Action = ActionLeft
		o.Error += fmt.Sprintf(" (and the move to %s failed, so it stays in place: %v)", dst, err)
		return
	}
	o.Action, o.MovedTo = ActionMoved, moved
	r.mu.Lock()
	r.Sum.Moved++
	r.mu.Unlock()
}

// sourceGone reports whether a move that copied nothing failed because
// its source is gone: the store said so (archive.ErrNotFound, from S3's
// NoSuchKey or 404, a local os.ErrNotExist), and says so again when asked
// about the source alone (a not-found of the destination's folder is no
// such answer). Anything else (a refusal, an outage, an answer that does
// not tell) is not "gone": the object counts as left in place.
func (r *recoverRun) sourceGone(ctx context.Context, key string, err error) bool {
	if !errors.Is(err, archive.ErrNotFound) {
		return false
	}
	_, serr := r.Store.Stat(ctx, key)
	return errors.Is(serr, archive.ErrNotFound)
}
