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
//
// The run is a pipeline of stages, each a method of scopeRun (scoperun.go):
//  1. watchLock: a lost archive lock stops the run;
//  2. work: Concurrency workers write the objects, each object's tail
//     (its notifications, then its delete or move) beside the next writes;
//  3. emitInOrder: results are counted and emitted in the selection's order;
//  4. deleteBehind: written objects are deleted in batches by a goroutine
//     of its own (not in a dry run, nor with Keep);
//  5. feed: the selection is read and fed to the workers, each message
//     prepared ahead by a goroutine of its own;
//  6. drain: every stage above ends, in that order of dependence;
//  7. finish: the summary's totals and the run's one error.
func (r *recoverRun) runScope(ctx context.Context, scope selection.Scope, emit func(Object) error) error {
	if r.Concurrency <= 0 {
		r.Concurrency = 1
	}
	if r.Warnf == nil {
		r.Warnf = func(string, ...any) {}
	}
	s := newScopeRun(ctx, r, emit)
	defer s.stop()
	s.watchLock()
	s.work()
	s.emitInOrder()
	s.deleteBehind()
	selErr := s.feed(scope)
	s.drain()
	return s.finish(ctx, selErr)
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
