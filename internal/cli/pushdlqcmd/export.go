package pushdlqcmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/deadletter/deadletter/internal/cli/cmdutil"
	"github.com/deadletter/deadletter/internal/cli/output"
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
		Long:  exportLong,
		Example: `  pushdlq export --dlq push-dlq --out push-dlq-2025-11-14.ndjson
  pushdlq export --dlq push-dlq --out drained.ndjson --delete --yes
  pushdlq export --dlq push-dlq --out drained.ndjson --delete --resume --yes`,
		Args: cmdutil.UsageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.validate(); err != nil {
				return err
			}
			if err := opts.startRecord(cmd); err != nil {
				return err
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

// validate checks the flags before the DLQ is read: a FILE or a
// FILE.partial already there is refused (an export never overwrites a
// file), and --delete without a terminal needs --yes.
func (o *ExportOptions) validate() error {
	if err := o.Output.Validate(); err != nil {
		return err
	}
	if o.Queue.DLQ == "" || o.Out == "" {
		return cmdutil.UsageErrorf("--dlq and --out are required")
	}
	if err := validateQueue(o.Queue); err != nil {
		return err
	}
	if o.Delete && o.Out == "-" {
		return cmdutil.UsageErrorf("--delete needs --out FILE: what goes to stdout cannot be known to be safe")
	}
	if o.Max < 0 {
		return cmdutil.UsageErrorf("--max %d: want 0 (all) or more", o.Max)
	}
	if o.Resume && o.Out == "-" {
		return cmdutil.UsageErrorf("--resume needs --out FILE: it finishes the export that left FILE.partial")
	}
	if o.Resume && o.Max > 0 {
		return cmdutil.UsageErrorf("--resume reads the whole DLQ (a message of FILE.partial may be anywhere in it): --max cannot be given")
	}
	if o.WaitHeld < 0 {
		return cmdutil.UsageErrorf("--wait-held %s: want 0 or more", o.WaitHeld)
	}
	if o.Out != "-" {
		if _, err := os.Stat(o.Out); err == nil {
			if o.Resume {
				return cmdutil.UsageErrorf("--resume: %s already exists: that export was finished (an export never overwrites a file)", o.Out)
			}
			return cmdutil.UsageErrorf("%s already exists; choose another file (an export never overwrites one)", o.Out)
		}
		// An export that stopped (or was killed) leaves its partial
		// file, which after a round of --delete holds the only copy
		// of the messages it deleted, and maybe others still in the
		// DLQ: refused before the DLQ is read, never overwritten, and
		// the refusal says how to finish it (--resume). Another
		// --out would put those others in both files.
		if _, err := os.Stat(o.Out + ".partial"); err == nil && !o.Resume {
			return partialLeftError(o.Factory, o)
		}
	}
	if o.Delete {
		if err := cmdutil.RequireYes(o.Factory.IO, o.Yes, "export --delete"); err != nil {
			return err
		}
	}
	return nil
}

// startRecord prepares the audit record of an export --delete (begun
// before its first delete) and says where it goes.
func (o *ExportOptions) startRecord(cmd *cobra.Command) error {
	if o.Delete && !o.Audit.NoAudit {
		place, err := o.Factory.auditPlace(cmd.Context(), o.Audit.Location)
		if err != nil {
			return err
		}
		o.record = &exportRecord{place: place, started: cmdutil.AuditStarted(cmd, nil, o.Audit, o.Factory.Getenv)}
		fmt.Fprintln(o.Factory.IO.ErrOut, place.planLine())
	} else if o.Delete {
		fmt.Fprintln(o.Factory.IO.ErrOut, "audit: none (--no-audit)")
	}
	return nil
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

// exportRun is one export's state, from the DLQ opened to the file
// committed.
type exportRun struct {
	f    *Factory
	opts *ExportOptions
	s    *dlqsession.Session
	out  *pushexport.File
	sum  ExportSummary
	// queued counts the messages held to be deleted with --delete: those
	// written, and (resuming) those received again that the file has.
	queued int
	// scanErr and writeErr are what stopped the last scan and the
	// writing; overLimit is set when SQS's in-flight limit stopped the
	// last scan (then scanErr is nil); round counts the scans.
	scanErr, writeErr error
	overLimit         *sqsmove.InFlightLimitError
	round             int
}

// runExport is the export, step by step:
//  1. lock FILE.partial, read it for --resume, and open the DLQ (open);
//     whatever happens next, every message still held is released and
//     the summary written (close, deferred);
//  2. check the partial file against the queue and wait until nothing of
//     the DLQ is in flight (resumeFile), or create the file (createFile);
//  3. scan, and with --delete read on past SQS's in-flight limit in
//     rounds (scanAll, readOn);
//  4. end: a resumed --delete deletes, then commits, only once the file
//     can hold nothing still in the DLQ (finishResumed); any other export
//     says what it could not read, deletes (asked) and commits (finish).
func runExport(ctx context.Context, opts *ExportOptions) (err error) {
	if opts.Out != "-" {
		unlock, err := exportLock(opts.Out)
		if err != nil {
			return err
		}
		defer unlock()
	}
	r := &exportRun{f: opts.Factory, opts: opts, round: 1}
	if err := r.open(ctx); err != nil {
		return err
	}
	defer func() { err = r.close(err) }()
	r.s.Banner("export")
	if opts.Resume {
		err = r.resumeFile(ctx)
	} else {
		err = r.createFile()
	}
	if err != nil {
		return err
	}
	if err := r.scanAll(ctx); err != nil {
		return err
	}
	if opts.Resume && opts.Delete {
		return r.finishResumed(ctx)
	}
	return r.finish(ctx)
}

// open reads FILE.partial for --resume (before the DLQ is opened, and a
// torn last line cut: a file that is not an export is refused having read
// nothing), then opens the DLQ.
func (r *exportRun) open(ctx context.Context) (err error) {
	if r.opts.Resume {
		if r.out, err = openPartial(r.opts.Out, r.f.IO.ErrOut); err != nil {
			return err
		}
	}
	if r.s, err = openSession(ctx, r.f, r.opts.Queue); err != nil {
		if r.out != nil {
			r.out.Abort()
		}
		return err
	}
	r.sum = ExportSummary{Type: "summary", Queue: r.s.Queue.URL, File: r.opts.Out}
	r.opts.record.attach(r.opts, r.s.Queue.URL, &r.sum)
	return nil
}

// close releases every message still held and writes the summary of a
// run that ended or exits 3; err is what the run came to.
func (r *exportRun) close(err error) error {
	r.sum.Released, r.sum.ReleaseFailed = r.s.Close()
	if err == nil || errors.Is(err, cmdutil.PartialError) {
		if werr := writeExportSummary(r.f, r.opts, r.sum); werr != nil && err == nil {
			err = werr
		}
	}
	return err
}

// createFile creates FILE.partial (or writes to stdout), recording the
// queue.
func (r *exportRun) createFile() (err error) {
	if r.out, err = pushexport.Create(r.opts.Out, r.f.IO.Out); err != nil {
		return err
	}
	if err = r.out.RecordSource(r.s.Queue.URL); err != nil {
		r.out.Abort()
		return err
	}
	return nil
}

// stopped ends an export that stopped before its file was committed
// (exportStopped).
func (r *exportRun) stopped(err error, stdoutGone bool) error {
	return exportStopped(r.f, r.opts, r.out, &r.sum, err, stdoutGone)
}

// finish ends an export that is not a resumed --delete. A message in
// flight that this run does not hold (another consumer's, or a stopped
// export's until its visibility timeout runs out) was invisible to the
// scan: the file lacks it. A resume keeps FILE.partial for the same
// command to finish once it is visible; any other export commits what it
// read, says how many it could not read, and exits 3. (A scan stopped by
// the in-flight limit or --max did not read the whole DLQ anyway: it says
// how far it got, and exits 3.)
func (r *exportRun) finish(ctx context.Context) error {
	f, opts, s := r.f, r.opts, r.s
	elsewhere := 0
	if r.overLimit == nil && !r.atMax() {
		var err error
		if elsewhere, err = pushexport.InFlightElsewhere(ctx, s); err != nil {
			return r.stopped(err, false)
		}
	}
	inFlight := fmt.Sprintf("%s of %s in flight after the scan, held by another consumer or by a stopped export (until its --visibility-timeout runs out), not by this run: the scan could not receive them",
		output.Plural(elsewhere, "message"), sqsmove.Name(s.Queue.URL))
	if elsewhere > 0 && opts.Resume {
		fmt.Fprintf(f.IO.ErrOut, "not written to %s: %s; so it is not made %s\n", r.out.Partial, inFlight, r.out.Final)
		return r.stopped(cmdutil.PartialError, false)
	}
	err := r.deleteAndCommit(ctx)
	switch {
	case r.overLimit != nil:
		rest := "the file holds them and every other message is released; run again for the rest"
		if opts.Delete {
			rest = "the file holds them; once they are deleted, run again for the rest"
		}
		fmt.Fprintln(f.IO.ErrOut, inFlightLimitNote(r.overLimit, s.Queue.Visible+s.Queue.InFlight, rest))
		if err == nil {
			err = cmdutil.PartialError
		}
	case elsewhere > 0 && err == nil:
		fmt.Fprintf(f.IO.ErrOut, "not written to %s: %s; they are still in the DLQ: export them once they are visible again (`pushdlq processor disarm` stops the push-dlq processor)\n",
			map[bool]string{true: "stdout", false: opts.Out}[opts.Out == "-"], inFlight)
		err = cmdutil.PartialError
	}
	return err
}

// deleteAndCommit deletes, with --delete, the messages held (after asking,
// unless --yes) before the file is committed, as a resumed run does:
// FILE.partial (synced, the write-ahead) becomes FILE only once none of
// its lines is still in the DLQ, so a run killed before then leaves
// FILE.partial, which --resume finishes. FILE then never holds a message
// the DLQ holds too, unless the operator declined the deletion (said) or a
// delete failed (exit 3).
func (r *exportRun) deleteAndCommit(ctx context.Context) error {
	f, opts, out := r.f, r.opts, r.out
	held := r.queued - r.sum.Deleted
	declined := false
	if opts.Delete && held > 0 && opts.Out != "-" {
		if err := out.Sync(); err != nil {
			return r.stopped(err, false)
		}
		if !opts.Yes {
			fmt.Fprintf(f.IO.ErrOut, "wrote %s to %s (synced)\n", output.Plural(r.sum.Exported, "message"), out.Partial)
			ok, err := cmdutil.Confirm(f.IO, fmt.Sprintf("Delete the %s from %s? Then the file becomes %s.",
				output.Plural(held, "message"), sqsmove.Name(r.s.Queue.URL), filepath.Base(opts.Out)), "yes")
			if err != nil {
				return r.stopped(err, false)
			}
			declined = !ok
		}
		if !declined {
			if err := r.deleteHeld(ctx, held); err != nil {
				return err
			}
			if err := ctx.Err(); err != nil {
				return r.stopped(err, false)
			}
		}
	}
	if err := r.commit(); err != nil {
		return err
	}
	if opts.Out != "-" {
		fmt.Fprintf(f.IO.ErrOut, "wrote %s to %s (synced)\n", output.Plural(r.sum.Exported, "message"), opts.Out)
	}
	if declined {
		if r.sum.Deleted > 0 {
			fmt.Fprintf(f.IO.ErrOut, "the last %s were not deleted (released): they are in %s and in the DLQ; the %s deleted before are in %s only\n",
				output.Plural(held, "message"), opts.Out, output.Plural(r.sum.Deleted, "message"), opts.Out)
		} else {
			fmt.Fprintln(f.IO.ErrOut, "nothing deleted")
		}
	}
	return nil
}

// commit makes FILE.partial FILE and puts its size and digest in the
// summary.
func (r *exportRun) commit() error {
	if err := r.out.Commit(); err != nil {
		return r.stopped(err, false)
	}
	r.sum.Bytes = r.out.Bytes()
	digest := r.out.Digest()
	r.sum.SHA256 = &digest
	return nil
}
