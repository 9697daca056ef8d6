package pushdlqcmd

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/deadletter/deadletter/internal/cli/cmdutil"
	"github.com/deadletter/deadletter/internal/cli/output"
	"github.com/deadletter/deadletter/internal/shellword"
	"github.com/deadletter/deadletter/internal/sqsmove"
	"github.com/deadletter/deadletter/internal/workflow/dlqsession"
	"github.com/deadletter/deadletter/internal/workflow/pushexport"
)

// ExportOptions are pushdlq export's inputs.
type ExportOptions struct {
	Factory *Factory
	Queue   dlqsession.QueueOptions
	Out     string
	Delete  bool
	Yes     bool
	Max     int
	// Resume finishes the export that left Out.partial: the messages
	// already in it are not written again (and, with Delete, are deleted
	// from the DLQ), the rest is appended.
	Resume   bool
	WaitHeld time.Duration // with Resume: how long to wait for messages in flight
	Output   *cmdutil.Output
	// Audit: --reason, --no-audit, --audit; with --delete the run keeps an
	// audit record, begun before its first delete (exportRecord).
	Audit  cmdutil.AuditFlags
	record *exportRecord
}

// NewCmdExport builds `pushdlq export`.
func NewCmdExport(f *Factory) *cobra.Command {
	opts := &ExportOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "export --dlq URL|NAME --out FILE.ndjson [--delete] [--resume]",
		Short: "Write every DLQ message to an NDJSON file",
		Long: `Receive every message of the DLQ and write it to an NDJSON file, one message
per line: message_id, body, message_attributes, attributes (the system
attributes: SentTimestamp, ApproximateReceiveCount, MessageGroupId, ...)
and queue (the DLQ's URL). 'pushdlq replay --from-file' reads the file
back, edited or not.

The file is written as FILE.partial, flushed and synced to disk. Nothing
is deleted from the DLQ unless --delete is given; then only the messages
that are in the synced file are deleted, every other message is made
visible again, and only then does FILE.partial become FILE (never
replacing an existing FILE): FILE never holds a message still in the DLQ
unless the deletion was declined.

A DLQ deeper than SQS's in-flight limit (about 120,000 messages received
and not yet deleted) stops the scan there. With --delete the export reads
on (after asking, unless --yes): it syncs FILE.partial, deletes the
messages it holds, and scans again, appending to the same file, until the
DLQ is read to its end. Otherwise the file holds what was read, and the
run says how far it got and exits 3. A message in flight elsewhere after
the scan (another consumer's, or a stopped export's) could not be read:
the run says how many, and exits 3, the file holding the rest.

An export that stopped or was killed leaves FILE.partial, and a new export
to FILE is refused. --resume finishes it, with --delete or without: it
refuses (exit 2, naming the line) a FILE.partial with a message id on two
lines or a line of another queue, waits (at most --wait-held) until
nothing of the DLQ is in flight, scans the DLQ again, appends the messages
that are not in FILE.partial (by message id) and, with --delete, deletes
from the DLQ both those and the ones it finds already in the file, which
it does not write again. FILE.partial becomes FILE only once the scan read
the whole DLQ, every delete succeeded and nothing else of the DLQ was in
flight: every message is then in the file once (and, with --delete, in
exactly one place). Otherwise FILE.partial stays, and the run exits 3
(saying how many messages were in flight; 1 when messages stay in flight
past --wait-held) and prints the command to run again.`,
		Example: `  pushdlq export --dlq push-dlq --out push-dlq-2025-11-14.ndjson
  pushdlq export --dlq push-dlq --out drained.ndjson --delete --yes
  pushdlq export --dlq push-dlq --out drained.ndjson --delete --resume --yes`,
		Args: cmdutil.UsageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.Output.Validate(); err != nil {
				return err
			}
			if opts.Queue.DLQ == "" || opts.Out == "" {
				return cmdutil.UsageErrorf("--dlq and --out are required")
			}
			if err := validateQueue(opts.Queue); err != nil {
				return err
			}
			if opts.Delete && opts.Out == "-" {
				return cmdutil.UsageErrorf("--delete needs --out FILE: what goes to stdout cannot be known to be safe")
			}
			if opts.Max < 0 {
				return cmdutil.UsageErrorf("--max %d: want 0 (all) or more", opts.Max)
			}
			if opts.Resume && opts.Out == "-" {
				return cmdutil.UsageErrorf("--resume needs --out FILE: it finishes the export that left FILE.partial")
			}
			if opts.Resume && opts.Max > 0 {
				return cmdutil.UsageErrorf("--resume reads the whole DLQ (a message of FILE.partial may be anywhere in it): --max cannot be given")
			}
			if opts.WaitHeld < 0 {
				return cmdutil.UsageErrorf("--wait-held %s: want 0 or more", opts.WaitHeld)
			}
			if opts.Out != "-" {
				if _, err := os.Stat(opts.Out); err == nil {
					if opts.Resume {
						return cmdutil.UsageErrorf("--resume: %s already exists: that export was finished (an export never overwrites a file)", opts.Out)
					}
					return cmdutil.UsageErrorf("%s already exists; choose another file (an export never overwrites one)", opts.Out)
				}
				// An export that stopped (or was killed) leaves its partial
				// file, which after a round of --delete holds the only copy
				// of the messages it deleted, and maybe others still in the
				// DLQ: refused before the DLQ is read, never overwritten, and
				// the refusal says how to finish it (--resume). Another
				// --out would put those others in both files.
				if _, err := os.Stat(opts.Out + ".partial"); err == nil && !opts.Resume {
					return partialLeftError(f, opts)
				}
			}
			if opts.Delete {
				if err := cmdutil.RequireYes(f.IO, opts.Yes, "export --delete"); err != nil {
					return err
				}
			}
			if opts.Delete && !opts.Audit.NoAudit {
				place, err := f.auditPlace(cmd.Context(), opts.Audit.Location)
				if err != nil {
					return err
				}
				opts.record = &exportRecord{place: place, started: cmdutil.AuditStarted(cmd, nil, opts.Audit, f.Getenv)}
				fmt.Fprintln(f.IO.ErrOut, place.planLine())
			} else if opts.Delete {
				fmt.Fprintln(f.IO.ErrOut, "audit: none (--no-audit)")
			}
			err := runExport(cmd.Context(), opts)
			opts.record.finish(cmd.Context(), f, err)
			return err
		},
	}
	addQueueFlags(cmd, &opts.Queue, true)
	fl := cmd.Flags()
	fl.StringVar(&opts.Out, "out", "", "the NDJSON file to write (- for stdout, without --delete)")
	fl.BoolVar(&opts.Delete, "delete", false, "delete from the DLQ what was written to the file")
	fl.BoolVarP(&opts.Yes, "yes", "y", false, "do not ask before deleting")
	fl.IntVar(&opts.Max, "max", 0, "export at most this many messages (0: all)")
	fl.BoolVar(&opts.Resume, "resume", false, "finish the export that stopped and left FILE.partial: append what is not in it, and with --delete delete what is")
	fl.DurationVar(&opts.WaitHeld, "wait-held", defaultWaitHeld, "with --resume: how long to wait for messages of the DLQ in flight (the stopped export's) to be visible again")
	cmdutil.AddAuditFlags(cmd, &opts.Audit, true)
	opts.Output = cmdutil.AddOutputFlag(cmd, "table", "json")
	return cmd
}

// ExportSummary is the summary record of pushdlq export.
type ExportSummary struct {
	Type          string  `json:"type"`
	Queue         string  `json:"queue"`
	File          string  `json:"file"`
	Exported      int     `json:"exported"`
	Bytes         int64   `json:"bytes"`
	SHA256        *string `json:"sha256"`
	Deleted       int     `json:"deleted"`
	DeleteFailed  int     `json:"delete_failed"`
	Released      int     `json:"released"`
	ReleaseFailed int     `json:"release_failed"`
	// Resumed: the lines FILE.partial held when a --resume began (they
	// are counted in Exported); AlreadyInFile: the messages the resume
	// received that were among them, not written again (deleted, with
	// --delete, and counted in Deleted).
	Resumed       int `json:"resumed"`
	AlreadyInFile int `json:"already_in_file"`
}

func runExport(ctx context.Context, opts *ExportOptions) (err error) {
	f := opts.Factory
	if opts.Out != "-" {
		unlock, err := exportLock(opts.Out)
		if err != nil {
			return err
		}
		defer unlock()
	}
	var out *pushexport.File
	if opts.Resume {
		// Read (and a torn last line cut) before the DLQ is opened: a file
		// that is not an export is refused having read nothing.
		if out, err = openPartial(opts.Out, f.IO.ErrOut); err != nil {
			return err
		}
	}
	s, err := openSession(ctx, f, opts.Queue)
	if err != nil {
		if out != nil {
			out.Abort()
		}
		return err
	}
	sum := ExportSummary{Type: "summary", Queue: s.Queue.URL, File: opts.Out}
	opts.record.attach(opts, s.Queue.URL, &sum)
	defer func() {
		sum.Released, sum.ReleaseFailed = s.Close()
		if err == nil || errors.Is(err, cmdutil.PartialError) {
			if werr := writeExportSummary(f, opts, sum); werr != nil && err == nil {
				err = werr
			}
		}
	}()
	s.Banner("export")
	if opts.Resume && out.Source() != "" && !pushexport.SameQueue(out.Source(), s.Queue.URL) {
		// Its lines are another queue's: none would be found here and
		// deleted from there, and this queue's messages would join them.
		out.Abort()
		return cmdutil.UsageErrorf("--resume: %s was exported from %s, not %s: finish it with --dlq %s",
			out.Partial, sqsmove.Name(out.Source()), sqsmove.Name(s.Queue.URL), shellword.Quote(out.Source()))
	}
	if opts.Resume {
		sum.Resumed, sum.Exported = out.Resumed(), out.Resumed()
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
	} else if out, err = pushexport.Create(opts.Out, f.IO.Out); err != nil {
		return err
	} else if err = out.RecordSource(s.Queue.URL); err != nil {
		out.Abort()
		return err
	}
	// queued counts the messages held to be deleted with --delete: those
	// written, and (resuming) those received again that the file has.
	queued := 0
	var writeErr error
	write := func(_ int, m *sqsmove.Message) bool {
		if out.Holds(m.MessageID) {
			sum.AlreadyInFile++
			queued++
			return false
		}
		if writeErr = out.Write(m); writeErr != nil {
			return true
		}
		sum.Exported++
		queued++
		return opts.Max > 0 && sum.Exported >= opts.Max
	}
	scanErr := s.Scan(ctx, 0, write)
	// SQS's in-flight limit ends the scan, not the export: the file holds
	// what was read. With --delete the run reads on, in rounds: once what
	// it read is synced to the partial file and deleted from the DLQ, it
	// is no longer in flight, and the next scan appends to the same file
	// (and the same digest). Without --delete, or when the operator
	// declines, the file is committed and the run says how far it got.
	var overLimit *sqsmove.InFlightLimitError
	if errors.As(scanErr, &overLimit) {
		scanErr = nil
	}
	round := 1
	for overLimit != nil && opts.Delete && opts.Out != "-" && writeErr == nil && ctx.Err() == nil && !(opts.Max > 0 && sum.Exported >= opts.Max) {
		held := queued - sum.Deleted
		if !opts.Yes {
			ok, err := cmdutil.Confirm(f.IO, fmt.Sprintf("SQS's in-flight limit stopped the scan. Delete the %s read so far (synced to %s) and read on?",
				output.Plural(held, "message"), out.Partial), "yes")
			if err != nil {
				return exportStopped(f, opts, out, &sum, err, false)
			}
			if !ok {
				break // as a run that does not read on: commit, delete (asked), run again for the rest
			}
		}
		// Write-ahead: a message is deleted only once its line is on disk.
		if writeErr = out.Sync(); writeErr != nil {
			break
		}
		if err := opts.record.begin(ctx, f); err != nil {
			return exportStopped(f, opts, out, &sum, err, false)
		}
		if !deleteExported(ctx, opts.record, f.IO.ErrOut, s.Hold, held, out.Partial, &sum) {
			return exportStopped(f, opts, out, &sum, cmdutil.PartialError, false)
		}
		if ctx.Err() != nil {
			break
		}
		round++
		fmt.Fprintf(f.IO.ErrOut, "round %d: the %s read so far are in %s (synced) and deleted from the DLQ: reading on past SQS's in-flight limit\n",
			round, output.Plural(sum.Exported, "message"), out.Partial)
		before := queued
		overLimit = nil
		// Messages received after the scan stopped are still held: this
		// round's first.
		scanErr = s.Hold.Readmit(write)
		if scanErr == nil && writeErr == nil && !(opts.Max > 0 && sum.Exported >= opts.Max) {
			scanErr = s.Scan(ctx, 0, write)
		}
		if errors.As(scanErr, &overLimit) {
			scanErr = nil
		}
		if overLimit != nil && queued == before {
			fmt.Fprintln(f.IO.ErrOut, "stopped reading on: SQS's in-flight limit stopped the scan again before it read anything new (the messages in flight are not this run's)")
			break
		}
	}
	if err := errors.Join(scanErr, writeErr, ctx.Err()); err != nil {
		return exportStopped(f, opts, out, &sum, err, writeErr != nil)
	}
	if opts.Resume && opts.Delete {
		return finishResumed(ctx, f, opts, s, out, &sum, queued, overLimit)
	}
	// A message in flight that this run does not hold (another consumer's,
	// or a stopped export's until its visibility timeout runs out) was
	// invisible to the scan: the file lacks it. A resume keeps
	// FILE.partial for the same command to finish once it is visible; any
	// other export commits what it read, says how many it could not read,
	// and exits 3. (A scan stopped by the in-flight limit or --max did not
	// read the whole DLQ anyway.)
	elsewhere := 0
	if overLimit == nil && !(opts.Max > 0 && sum.Exported >= opts.Max) {
		if elsewhere, err = pushexport.InFlightElsewhere(ctx, s); err != nil {
			return exportStopped(f, opts, out, &sum, err, false)
		}
	}
	if elsewhere > 0 {
		inFlight := fmt.Sprintf("%s of %s in flight after the scan, held by another consumer or by a stopped export (until its --visibility-timeout runs out), not by this run: the scan could not receive them",
			output.Plural(elsewhere, "message"), sqsmove.Name(s.Queue.URL))
		if opts.Resume {
			fmt.Fprintf(f.IO.ErrOut, "not written to %s: %s; so it is not made %s\n", out.Partial, inFlight, out.Final)
			return exportStopped(f, opts, out, &sum, cmdutil.PartialError, false)
		}
		defer func() {
			if err == nil {
				fmt.Fprintf(f.IO.ErrOut, "not written to %s: %s; they are still in the DLQ: export them once they are visible again (`pushdlq processor disarm` stops the push-dlq processor)\n",
					map[bool]string{true: "stdout", false: opts.Out}[opts.Out == "-"], inFlight)
				err = cmdutil.PartialError
			}
		}()
	}

	if overLimit != nil {
		// The run did not read the whole DLQ: it says how far it got and
		// exits 3.
		rest := "the file holds them and every other message is released; run again for the rest"
		if opts.Delete {
			rest = "the file holds them; once they are deleted, run again for the rest"
		}
		defer func() {
			fmt.Fprintln(f.IO.ErrOut, inFlightLimitNote(overLimit, s.Queue.Visible+s.Queue.InFlight, rest))
			if err == nil {
				err = cmdutil.PartialError
			}
		}()
	}
	// With --delete, as a resumed run does, the messages are deleted
	// before the file is committed: FILE.partial (synced, the write-ahead)
	// becomes FILE only once none of its lines is still in the DLQ, so a
	// run killed before then leaves FILE.partial, which --resume finishes.
	// FILE then never holds a message the DLQ holds too, unless the
	// operator declined the deletion (said) or a delete failed (exit 3).
	held := queued - sum.Deleted
	declined := false
	if opts.Delete && held > 0 && opts.Out != "-" {
		if err := out.Sync(); err != nil {
			return exportStopped(f, opts, out, &sum, err, false)
		}
		if !opts.Yes {
			fmt.Fprintf(f.IO.ErrOut, "wrote %s to %s (synced)\n", output.Plural(sum.Exported, "message"), out.Partial)
			ok, err := cmdutil.Confirm(f.IO, fmt.Sprintf("Delete the %s from %s? Then the file becomes %s.",
				output.Plural(held, "message"), sqsmove.Name(s.Queue.URL), filepath.Base(opts.Out)), "yes")
			if err != nil {
				return exportStopped(f, opts, out, &sum, err, false)
			}
			declined = !ok
		}
		if !declined {
			if err := opts.record.begin(ctx, f); err != nil {
				return exportStopped(f, opts, out, &sum, err, false)
			}
			if !deleteExported(ctx, opts.record, f.IO.ErrOut, s.Hold, held, out.Partial, &sum) {
				return exportStopped(f, opts, out, &sum, cmdutil.PartialError, false)
			}
			if err := ctx.Err(); err != nil {
				return exportStopped(f, opts, out, &sum, err, false)
			}
		}
	}
	if err := out.Commit(); err != nil {
		return exportStopped(f, opts, out, &sum, err, false)
	}
	sum.Bytes = out.Bytes()
	digest := out.Digest()
	sum.SHA256 = &digest
	if opts.Out != "-" {
		fmt.Fprintf(f.IO.ErrOut, "wrote %s to %s (synced)\n", output.Plural(sum.Exported, "message"), opts.Out)
	}
	if declined {
		if sum.Deleted > 0 {
			fmt.Fprintf(f.IO.ErrOut, "the last %s were not deleted (released): they are in %s and in the DLQ; the %s deleted before are in %s only\n",
				output.Plural(held, "message"), opts.Out, output.Plural(sum.Deleted, "message"), opts.Out)
		} else {
			fmt.Fprintln(f.IO.ErrOut, "nothing deleted")
		}
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
func finishResumed(ctx context.Context, f *Factory, opts *ExportOptions, s *dlqsession.Session, out *pushexport.File, sum *ExportSummary, queued int, overLimit *sqsmove.InFlightLimitError) error {
	w := f.IO.ErrOut
	var notAll string
	if overLimit != nil {
		notAll = inFlightLimitNote(overLimit, s.Queue.Visible+s.Queue.InFlight, "lines of "+out.Partial+" may be among the messages not read, so it is not made "+out.Final)
	} else if n, err := pushexport.InFlightElsewhere(ctx, s); err != nil {
		return exportStopped(f, opts, out, sum, err, false)
	} else if n > 0 {
		notAll = fmt.Sprintf("%s of %s in flight after the scan that this run does not hold (the stopped export's, if its visibility timeout has not run out, or another consumer's): lines of %s may be among them, so it is not made %s",
			output.Plural(n, "message"), sqsmove.Name(s.Queue.URL), out.Partial, out.Final)
	}
	if held := queued - sum.Deleted; held > 0 {
		if err := out.Sync(); err != nil { // write-ahead, as each round
			return exportStopped(f, opts, out, sum, err, false)
		}
		if !opts.Yes {
			ok, err := cmdutil.Confirm(f.IO, fmt.Sprintf("Delete the %s of %s still in %s?", output.Plural(held, "message"), out.Partial, sqsmove.Name(s.Queue.URL)), "yes")
			if err != nil || !ok {
				fmt.Fprintf(w, "the last %s were not deleted (released): they are in %s and in the DLQ\n", output.Plural(held, "message"), out.Partial)
				return exportStopped(f, opts, out, sum, cmp.Or(err, error(cmdutil.PartialError)), false)
			}
		}
		if err := opts.record.begin(ctx, f); err != nil {
			return exportStopped(f, opts, out, sum, err, false)
		}
		if !deleteExported(ctx, opts.record, w, s.Hold, held, out.Partial, sum) {
			return exportStopped(f, opts, out, sum, cmdutil.PartialError, false)
		}
		if err := ctx.Err(); err != nil {
			return exportStopped(f, opts, out, sum, err, false)
		}
	}
	if notAll != "" {
		fmt.Fprintln(w, notAll)
		return exportStopped(f, opts, out, sum, cmdutil.PartialError, false)
	}
	if err := out.Commit(); err != nil {
		return exportStopped(f, opts, out, sum, err, false)
	}
	sum.Bytes = out.Bytes()
	digest := out.Digest()
	sum.SHA256 = &digest
	fmt.Fprintf(w, "wrote %s to %s (synced): %d were in %s already, %d appended; %d received again were already in it (deleted, not written again); the DLQ holds none of them\n",
		output.Plural(sum.Exported, "message"), out.Final, sum.Resumed, out.Partial, sum.Exported-sum.Resumed, sum.AlreadyInFile)
	return nil
}

// exportStopped ends an export that stopped before its file was
// committed. The partial file is kept, never removed: once a round was
// deleted it is the only copy of those messages, and the operator is told
// how many, and the command that finishes the export (--resume). A failed
// delete (exit 3) writes the summary, which then names the partial file;
// any other stop exits with its error's code.
func exportStopped(f *Factory, opts *ExportOptions, out *pushexport.File, sum *ExportSummary, err error, stdoutGone bool) error {
	out.Abort()
	w := f.IO.ErrOut
	finish := func() {
		if !opts.Delete {
			fmt.Fprintf(w, "finish the export (once nothing of the DLQ is in flight, the messages not in %s are appended; nothing is deleted) with:\n  %s\n",
				out.Partial, exportResumeCommand(f, opts, false))
			return
		}
		fmt.Fprintf(w, "finish the export (the lines of %s still in the DLQ are deleted from it and not written again, the rest of the DLQ is appended, every message ends in exactly one place) with:\n  %s\n",
			out.Partial, exportResumeCommand(f, opts, opts.Delete))
	}
	switch {
	case out.Final == "-" && stdoutGone:
		// A reader that went away (`export --out - | head -1`): stop
		// printing; the deferred close releases every message (--delete
		// needs a file: nothing was deleted).
		return stoppedError("nothing was deleted; every message is released")
	case out.Final == "-":
		fmt.Fprintln(w, "export stopped: nothing was deleted; every message is released")
	case sum.Deleted == 0 && out.Resumed() == 0:
		fmt.Fprintf(w, "export stopped: nothing was deleted; the messages read so far are in %s\n", out.Partial)
		finish()
	case sum.Deleted == 0 && !opts.Delete:
		fmt.Fprintf(w, "export stopped: nothing was deleted; %s holds %s (keep it: if the export that left it ran with --delete, it is the only copy of the messages that export deleted)\n",
			out.Partial, output.Plural(sum.Exported, "message"))
		finish()
	default:
		if out.Resumed() == 0 {
			fmt.Fprintf(w, "export stopped: %s deleted from the DLQ, each once its line was synced to %s; keep that file, it is their only copy. "+
				"It holds %s more, which were not deleted (they stay in the DLQ); the rest of the DLQ was not read\n",
				map[bool]string{true: "1 message was", false: fmt.Sprintf("%d messages were", sum.Deleted)}[sum.Deleted == 1],
				out.Partial, output.Plural(sum.Exported-sum.Deleted, "message"))
		} else {
			fmt.Fprintf(w, "export stopped: this run deleted %s from the DLQ, each once its line was synced to %s; keep that file: it holds %s, and is the only copy of those no longer in the DLQ\n",
				output.Plural(sum.Deleted, "message"), out.Partial, output.Plural(sum.Exported, "message"))
		}
		finish()
	}
	if out.Final != "-" {
		// The summary (exit 3) names what holds the messages.
		sum.File, sum.Bytes = out.Partial, out.Bytes()
		digest := out.Digest()
		sum.SHA256 = &digest
	}
	return err
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

func writeExportSummary(f *Factory, opts *ExportOptions, s ExportSummary) error {
	w := f.IO.Out
	if opts.Out == "-" {
		w = f.IO.ErrOut // stdout holds the export itself
	}
	if opts.Output.Value == "json" {
		return output.WriteJSON(w, s)
	}
	digest := ""
	if s.SHA256 != nil {
		digest = *s.SHA256
	}
	_, err := fmt.Fprintf(w, "exported  %s (%d bytes) to %s\nsha256    %s\ndeleted   %d (failed %d)\nreleased  %d (failed %d)\n",
		output.Plural(s.Exported, "message"), s.Bytes, s.File, digest, s.Deleted, s.DeleteFailed, s.Released, s.ReleaseFailed)
	return err
}
