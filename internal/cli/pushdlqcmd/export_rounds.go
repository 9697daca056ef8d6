package pushdlqcmd

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/deadletter/deadletter/internal/cli/cmdutil"
	"github.com/deadletter/deadletter/internal/cli/output"
	"github.com/deadletter/deadletter/internal/sqsmove"
	"github.com/deadletter/deadletter/internal/workflow/pushexport"
)

// write is the scan's callback: it writes a message the file does not
// hold yet, and holds both kinds for the deletes; true stops the scan.
func (r *exportRun) write(_ int, m *sqsmove.Message) bool {
	if r.out.Holds(m.MessageID) {
		r.sum.AlreadyInFile++
		r.queued++
		return false
	}
	if r.writeErr = r.out.Write(m); r.writeErr != nil {
		return true
	}
	r.sum.Exported++
	r.queued++
	return r.atMax()
}

// atMax reports an export that wrote its --max messages.
func (r *exportRun) atMax() bool { return r.opts.Max > 0 && r.sum.Exported >= r.opts.Max }

// scanned keeps what stopped a scan. SQS's in-flight limit ends the scan,
// not the export: the file holds what was read, and overLimit says how far
// it got.
func (r *exportRun) scanned(err error) {
	r.overLimit = nil
	if errors.As(err, &r.overLimit) {
		err = nil
	}
	r.scanErr = err
}

// scanAll scans the DLQ. With --delete the run reads on past SQS's
// in-flight limit, in rounds (readOn). Without --delete, or when the
// operator declines, the file is committed and the run says how far it
// got.
func (r *exportRun) scanAll(ctx context.Context) error {
	r.scanned(r.s.Scan(ctx, 0, r.write))
	for r.overLimit != nil && r.opts.Delete && r.opts.Out != "-" && r.writeErr == nil && ctx.Err() == nil && !r.atMax() {
		more, err := r.readOn(ctx)
		if err != nil {
			return err
		}
		if !more {
			break
		}
	}
	if err := errors.Join(r.scanErr, r.writeErr, ctx.Err()); err != nil {
		return r.stopped(err, r.writeErr != nil)
	}
	return nil
}

// readOn is one more round of an export --delete that SQS's in-flight
// limit stopped: once what it read is synced to the partial file and
// deleted from the DLQ, it is no longer in flight, and the next scan
// appends to the same file (and the same digest). more is false when the
// run reads on no further (declined: as a run that does not read on, it
// commits, deletes after asking, and says to run again for the rest; the
// file could not be synced; interrupted; or the limit stopped the scan
// again before it read anything new); err ends the run.
func (r *exportRun) readOn(ctx context.Context) (more bool, err error) {
	f, out := r.f, r.out
	held := r.queued - r.sum.Deleted
	if !r.opts.Yes {
		ok, err := cmdutil.Confirm(f.IO, fmt.Sprintf("SQS's in-flight limit stopped the scan. Delete the %s read so far (synced to %s) and read on?",
			output.Plural(held, "message"), out.Partial), "yes")
		if err != nil {
			return false, r.stopped(err, false)
		}
		if !ok {
			return false, nil
		}
	}
	// Write-ahead: a message is deleted only once its line is on disk.
	if r.writeErr = out.Sync(); r.writeErr != nil {
		return false, nil
	}
	if err := r.deleteHeld(ctx, held); err != nil {
		return false, err
	}
	if ctx.Err() != nil {
		return false, nil
	}
	r.round++
	fmt.Fprintf(f.IO.ErrOut, "round %d: the %s read so far are in %s (synced) and deleted from the DLQ: reading on past SQS's in-flight limit\n",
		r.round, output.Plural(r.sum.Exported, "message"), out.Partial)
	before := r.queued
	// Messages received after the scan stopped are still held: this
	// round's first.
	scanErr := r.s.Hold.Readmit(r.write)
	if scanErr == nil && r.writeErr == nil && !r.atMax() {
		scanErr = r.s.Scan(ctx, 0, r.write)
	}
	r.scanned(scanErr)
	if r.overLimit != nil && r.queued == before {
		fmt.Fprintln(f.IO.ErrOut, "stopped reading on: SQS's in-flight limit stopped the scan again before it read anything new (the messages in flight are not this run's)")
		return false, nil
	}
	return true, nil
}

// deleteHeld begins the audit record (once, before the first delete) and
// deletes the held messages whose lines are synced; its error ends the
// run, FILE.partial kept.
func (r *exportRun) deleteHeld(ctx context.Context, held int) error {
	if err := r.opts.record.begin(ctx, r.f); err != nil {
		return r.stopped(err, false)
	}
	if !deleteExported(ctx, r.opts.record, r.f.IO.ErrOut, r.s.Hold, held, r.out.Partial, &r.sum) {
		return r.stopped(cmdutil.PartialError, false)
	}
	return nil
}

// deleteExported deletes the want exported messages not deleted yet,
// counting them in sum, and reports whether every one was deleted;
// otherwise it says on w how many stay in the DLQ (and in file), and the
// caller stops with FILE.partial kept. Those whose hold was lost
// meanwhile (a renewal of their visibility was refused, or the run was
// paused past it: another consumer may have them) cannot be deleted by
// this run; they count as not deleted, said on w: they are in the file
// and still in the DLQ. Before, the run ended with exported > deleted and
// delete_failed 0, and exit 0.
func deleteExported(ctx context.Context, rec *exportRecord, w io.Writer, hold *sqsmove.Hold, want int, file string, sum *ExportSummary) bool {
	deleted, failed, lost := pushexport.DeleteHeld(ctx, hold, want, rec.deleted)
	if lost > 0 {
		fmt.Fprintf(w, "%s in %s were not deleted: this run no longer held them (a renewal of their visibility was refused, or the run was paused past --visibility-timeout); they are in the DLQ as well as in the file\n",
			output.Plural(lost, "message"), file)
	}
	sum.Deleted += deleted
	sum.DeleteFailed += failed + lost
	if failed+lost > 0 {
		fmt.Fprintf(w, "%s could not be deleted; they stay in the DLQ (and are in %s)\n", output.Plural(failed+lost, "message"), file)
		return false
	}
	return true
}
