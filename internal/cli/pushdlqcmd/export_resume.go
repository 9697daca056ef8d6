package pushdlqcmd

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/deadletter/deadletter/internal/cli/cmdutil"
	"github.com/deadletter/deadletter/internal/cli/output"
	"github.com/deadletter/deadletter/internal/shellword"
	"github.com/deadletter/deadletter/internal/sqsmove"
	"github.com/deadletter/deadletter/internal/workflow/dlqsession"
	"github.com/deadletter/deadletter/internal/workflow/pushexport"
)

// Finishing a stopped export (--resume).
//
// An export --delete that stopped or was killed leaves FILE.partial. Each
// of its whole lines is a message that is either no longer in the DLQ
// (deleted: a line is deleted only once it is synced; a delete whose reply
// was lost either reached SQS or did not) or still in it (the run died
// between the write and the delete). The file cannot tell which. A resume
// makes every line the first kind, and adds the rest of the DLQ:
//
//   - it cuts a torn last line (a line without its newline was never synced,
//     so never deleted: that message is still in the DLQ) and syncs the file
//     before anything is deleted;
//   - it waits until nothing of the DLQ is in flight (the killed run's hold
//     runs out after its --visibility-timeout), so that every line still in
//     the DLQ is visible to its scan;
//   - a received message whose MessageId is a line of the file is held and
//     deleted with its round, never written again; any other is appended,
//     synced and deleted as in a first run (a message received twice within
//     the run is held once, by the hold's seen-set);
//   - FILE.partial becomes FILE only when the scan read the DLQ to its end,
//     every delete succeeded and nothing else of the DLQ was in flight after
//     the scan; otherwise it stays FILE.partial and the run says to run the
//     same command again.
//
// So when a resume exits 0, every line of FILE is a message that is not in
// the DLQ, each message once; a resume that is itself killed leaves a
// FILE.partial of the same kind, finished by the same command.

// exportLock takes FILE.partial.lock, so that an export and a resume (or
// two resumes) never write one partial file at once: a second resume would
// not know the first one's lines, and write a message twice.
func exportLock(out string) (unlock func(), err error) {
	unlock, err = pushexport.Lock(out)
	if errors.Is(err, sqsmove.ErrJournalLocked) {
		return nil, cmdutil.UsageErrorf("%s.partial is being written by another export of %s (its lock %s.partial.lock is taken); wait for that run to end (on a system without flock a killed run leaves the lock file: remove it if no export is running)", out, out, out)
	}
	return unlock, err
}

// exportResumeCommand is the command that finishes an export to opts.Out
// that stopped, built from this invocation's DLQ and AWS flags and quoted
// for the shell, so that it runs as printed.
func exportResumeCommand(f *Factory, opts *ExportOptions, del bool) string {
	words := []string{"pushdlq", "export", "--dlq", opts.Queue.DLQ, "--out", opts.Out}
	if del {
		words = append(words, "--delete")
	}
	words = append(words, "--resume")
	if del && opts.Yes {
		words = append(words, "--yes")
	}
	if opts.Queue.Visibility != 0 && opts.Queue.Visibility != 2*time.Minute {
		words = append(words, "--visibility-timeout", opts.Queue.Visibility.String())
	}
	if opts.Queue.AllowRedrive {
		words = append(words, "--allow-redrive")
	}
	if opts.WaitHeld != 0 && opts.WaitHeld != defaultWaitHeld {
		words = append(words, "--wait-held", opts.WaitHeld.String())
	}
	if s := f.AWS; s != nil {
		for _, fl := range [][2]string{{"--profile", s.Profile}, {"--region", s.Region}, {"--endpoint-url", s.EndpointURL}} {
			if fl[1] != "" {
				words = append(words, fl[0], fl[1])
			}
		}
	}
	return shellword.Join(words...)
}

const defaultWaitHeld = 15 * time.Minute

// partialLeftError refuses an export to FILE while FILE.partial exists
// and says how to finish the export that left it; or, while a run holds
// its lock, that a run is writing it (it did not stop: there is nothing
// to finish yet).
func partialLeftError(f *Factory, opts *ExportOptions) error {
	unlock, err := exportLock(opts.Out)
	if err != nil {
		return err
	}
	unlock()
	finish := "\n  " + exportResumeCommand(f, opts, true)
	if !opts.Delete {
		finish = "\n  " + exportResumeCommand(f, opts, true) +
			"\nor, if it ran without --delete (then it deleted nothing), finish it without deleting with:\n  " + exportResumeCommand(f, opts, false)
	}
	return cmdutil.UsageErrorf("%s.partial exists: an earlier export to %s stopped (or was killed) and left it; if it ran with --delete, it may hold the only copy of messages it deleted from the DLQ, "+
		"and others that are still in the DLQ as well. Keep it, and finish that export: the messages of the file still in the DLQ are deleted from it and not written again, "+
		"the rest of the DLQ is appended, and the file becomes %s, every message in exactly one place. Run:%s", opts.Out, opts.Out, opts.Out, finish)
}

// openPartial reopens FILE.partial to finish the export that left it
// (pushexport.OpenPartial): a missing file or a line that is not an
// exported message is refused as a usage error, the file left as it is.
func openPartial(path string, errOut io.Writer) (*pushexport.File, error) {
	e, err := pushexport.OpenPartial(path, errOut)
	var bad *pushexport.NotAnExportError
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, cmdutil.UsageErrorf("--resume: %s.partial does not exist: there is no stopped export to %s to finish (run without --resume)", path, path)
	case errors.As(err, &bad):
		return nil, cmdutil.UsageErrorf("--resume: %s", bad)
	}
	return e, err
}

// waitUntilNothingInFlight waits, up to --wait-held, until nothing of the
// DLQ is in flight: the stopped export's messages stay invisible until its
// visibility timeout runs out; a line of the file still in the DLQ is
// deleted only once a scan receives it again, and (with --delete or
// without) a message not in the file is appended only once received.
func waitUntilNothingInFlight(ctx context.Context, f *Factory, opts *ExportOptions, s *dlqsession.Session, partial string) error {
	if s.Queue.InFlight == 0 {
		return nil
	}
	w := f.IO.ErrOut
	why := "those that are lines of " + partial + " are deleted only once received again"
	if !opts.Delete {
		why = "the scan cannot receive them, and those that are not lines of " + partial + " would be missing from it"
	}
	fmt.Fprintf(w, "%s of %s in flight: the stopped export held them until its --visibility-timeout runs out, or another consumer holds them; "+
		"%s: waiting for them (at most --wait-held %s)\n",
		output.Plural(int(s.Queue.InFlight), "message"), sqsmove.Name(s.Queue.URL), why, opts.WaitHeld)
	deadline := time.Now().Add(opts.WaitHeld)
	for n := s.Queue.InFlight; n > 0; {
		if !time.Now().Before(deadline) {
			return fmt.Errorf("%s of %s still in flight after --wait-held %s (another consumer holds them? `pushdlq processor disarm` stops the push-dlq processor); nothing was received, %s is left as it is; "+
				"run this again once they are visible:\n  %s", output.Plural(int(n), "message"), sqsmove.Name(s.Queue.URL), opts.WaitHeld, partial, exportResumeCommand(f, opts, opts.Delete))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(f.pollInterval(), time.Until(deadline)+time.Millisecond)):
		}
		q, err := sqsmove.Describe(ctx, s.API, s.Queue.URL)
		if err != nil {
			return err
		}
		n = q.InFlight
		s.Queue.Visible = q.Visible
	}
	fmt.Fprintln(w, "nothing is in flight any more: reading the DLQ")
	return nil
}

// resumeFile checks that the partial file is this queue's, records the
// queue in one of an older build, and waits until nothing of the DLQ is
// in flight.
func (r *exportRun) resumeFile(ctx context.Context) error {
	f, opts, out, s := r.f, r.opts, r.out, r.s
	if out.Source() != "" && !pushexport.SameQueue(out.Source(), s.Queue.URL) {
		// Its lines are another queue's: none would be found here and
		// deleted from there, and this queue's messages would join them.
		out.Abort()
		return cmdutil.UsageErrorf("--resume: %s was exported from %s, not %s: finish it with --dlq %s",
			out.Partial, sqsmove.Name(out.Source()), sqsmove.Name(s.Queue.URL), shellword.Quote(out.Source()))
	}
	r.sum.Resumed, r.sum.Exported = out.Resumed(), out.Resumed()
	fmt.Fprintf(f.IO.ErrOut, "resuming the export to %s: %s holds %s (synced); a message received again that is one of them is not written again%s\n",
		opts.Out, out.Partial, output.Plural(out.Resumed(), "message"), map[bool]string{true: " but deleted from the DLQ", false: ""}[opts.Delete])
	if out.Source() == "" {
		// A partial file of an older build: the lines appended record
		// the queue from now on.
		if err := out.RecordSource(s.Queue.URL); err != nil {
			out.Abort()
			return err
		}
	}
	// With or without --delete: a message in flight (the stopped
	// export's hold, until its visibility timeout runs out) cannot be
	// received by the scan, so it would be missing from FILE.
	if err := waitUntilNothingInFlight(ctx, f, opts, s, out.Partial); err != nil {
		out.Abort()
		return err
	}
	return nil
}

// finishResumed ends a resumed export --delete whose scan ended without
// an error. Unlike a first run, it deletes before it commits: FILE.partial
// becomes FILE only when no line of it can still be in the DLQ: the scan
// read the DLQ to its end, nothing else of the DLQ was in flight after it
// (a line among those would not have been seen), and every message it
// holds (written, or received again and already in the file) was deleted.
// Otherwise the partial file stays, and the run says to run it again.
func (r *exportRun) finishResumed(ctx context.Context) error {
	f, opts, s, out, sum := r.f, r.opts, r.s, r.out, &r.sum
	w := f.IO.ErrOut
	var notAll string
	if r.overLimit != nil {
		notAll = inFlightLimitNote(r.overLimit, s.Queue.Visible+s.Queue.InFlight, "lines of "+out.Partial+" may be among the messages not read, so it is not made "+out.Final)
	} else if n, err := pushexport.InFlightElsewhere(ctx, s); err != nil {
		return r.stopped(err, false)
	} else if n > 0 {
		notAll = fmt.Sprintf("%s of %s in flight after the scan that this run does not hold (the stopped export's, if its visibility timeout has not run out, or another consumer's): lines of %s may be among them, so it is not made %s",
			output.Plural(n, "message"), sqsmove.Name(s.Queue.URL), out.Partial, out.Final)
	}
	if held := r.queued - sum.Deleted; held > 0 {
		if err := out.Sync(); err != nil { // write-ahead, as each round
			return r.stopped(err, false)
		}
		if !opts.Yes {
			ok, err := cmdutil.Confirm(f.IO, fmt.Sprintf("Delete the %s of %s still in %s?", output.Plural(held, "message"), out.Partial, sqsmove.Name(s.Queue.URL)), "yes")
			if err != nil || !ok {
				fmt.Fprintf(w, "the last %s were not deleted (released): they are in %s and in the DLQ\n", output.Plural(held, "message"), out.Partial)
				return r.stopped(cmp.Or(err, error(cmdutil.PartialError)), false)
			}
		}
		if err := r.deleteHeld(ctx, held); err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return r.stopped(err, false)
		}
	}
	if notAll != "" {
		fmt.Fprintln(w, notAll)
		return r.stopped(cmdutil.PartialError, false)
	}
	if err := r.commit(); err != nil {
		return err
	}
	fmt.Fprintf(w, "wrote %s to %s (synced): %d were in %s already, %d appended; %d received again were already in it (deleted, not written again); the DLQ holds none of them\n",
		output.Plural(sum.Exported, "message"), out.Final, sum.Resumed, out.Partial, sum.Exported-sum.Resumed, sum.AlreadyInFile)
	return nil
}
