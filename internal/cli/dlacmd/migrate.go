package dlacmd

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/audit"
	"github.com/deadletter/deadletter/internal/awsconfig"
	"github.com/deadletter/deadletter/internal/awsread"
	"github.com/deadletter/deadletter/internal/cli/cmdutil"
	"github.com/deadletter/deadletter/internal/cli/output"
	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/recovery"
	"github.com/deadletter/deadletter/internal/workflow/legacymigrate"
)

// MigrateOptions are dla migrate-legacy's inputs.
type MigrateOptions struct {
	Factory     *Factory
	Archive     archiveFlag
	Output      *cmdutil.Output
	DryRun      bool
	Yes         bool
	Offline     bool
	Concurrency int
	BreakLock   bool
	Audit       cmdutil.AuditFlags
	audit       *dlaAudit
}

// NewCmdMigrateLegacy builds `dla migrate-legacy`.
func NewCmdMigrateLegacy(f *Factory) *cobra.Command {
	opts := &MigrateOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "migrate-legacy [flags]",
		Short: "Move pre-v18.3 archive objects into date folders, as Cumulus's dla-migration does",
		Long: `Move every legacy object of sqs/ (a flat <name>.json, or under sqs/YYYY/M/D/HH/)
into the date folder current Cumulus writes, so that Athena's partition-projected
table and date-bounded searches see it. It is Cumulus's dla-migration as a
command:

  - the object is turned into the DLA record Cumulus v21's writer stores
    (hoistCumulusMessageDetails: executionArn, status, granules and the other
    fields at the top, the innermost body re-serialised), as dla-migration does;
  - it goes to sqs/<date>/<its file name>, the date being its event time's UTC
    date, else the day the object was last modified (dla-migration uses the
    day it runs);
  - the new object is written only where no object is (another name gets .1,
    .2 ...), read back and compared, and only then is the original deleted.

It is idempotent: a second run finds nothing left to move, and a run stopped
between a copy and its delete (killed, even) reuses the copy it made, found
by its origin. One run at a time: a run takes a lock object in the archive
(locks/migrate-legacy.json); another is refused while it runs, and the lock
of a run of this host that was killed is taken over. --break-lock removes a
lock left by a run of another host. An object that cannot
be decoded is left where it is and reported (exit 3). --dry-run shows every
move and changes nothing. Without --offline, Step Functions is read for the
Cumulus message of a failed execution (as the writer does); with it, those
fields stay null.`,
		Example: `  dla migrate-legacy --archive s3://my-internal-bucket/my-stack --dry-run
  dla migrate-legacy --archive s3://my-internal-bucket/my-stack --yes -o ndjson`,
		Args: cmdutil.UsageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Validate(); err != nil {
				return err
			}
			if opts.Concurrency < 1 || opts.Concurrency > 256 {
				return cmdutil.UsageErrorf("--concurrency must be between 1 and 256, not %d", opts.Concurrency)
			}
			opts.audit = newDLAAudit(cmd, args, opts.Audit, f)
			return cmdutil.MutationError(runMigrate(cmd.Context(), opts))
		},
	}
	opts.Archive.register(cmd)
	fl := cmd.Flags()
	fl.BoolVar(&opts.DryRun, "dry-run", false, "show where each object would go; change nothing")
	fl.BoolVarP(&opts.Yes, "yes", "y", false, "do not ask for confirmation (required when stdin or stderr is not a terminal)")
	fl.BoolVar(&opts.Offline, "offline", false, "no Step Functions or S3 reads for the Cumulus message: its fields stay null where they need one")
	fl.IntVar(&opts.Concurrency, "concurrency", 8, "objects moved at once")
	fl.BoolVar(&opts.BreakLock, "break-lock", false, "remove the lock another migrate-legacy left (one that is not running) before taking it")
	cmdutil.AddAuditFlags(cmd, &opts.Audit, false)
	opts.Output = cmdutil.AddOutputFlag(cmd, "table", "json", "ndjson")
	return cmd
}

// MigrateResult is one legacy object's outcome (-o json/ndjson).
type MigrateResult = legacymigrate.Result

func runMigrate(ctx context.Context, opts *MigrateOptions) error {
	f := opts.Factory
	loc, err := opts.Archive.location(f)
	if err != nil {
		return err
	}
	if !opts.DryRun {
		if err := cmdutil.RequireYes(f.IO, opts.Yes, "dla migrate-legacy"); err != nil {
			return err
		}
	}
	store, err := f.OpenArchive(ctx, loc)
	if err != nil {
		return err
	}
	layout := dla.Layout{Stack: loc.Stack}
	if !opts.DryRun {
		release, err := legacymigrate.Lock(ctx, store, layout, opts.BreakLock)
		if err != nil {
			return err
		}
		defer release()
	}
	// The plan: how many legacy objects there are (listing only).
	n := 0
	if err := legacymigrate.List(ctx, store, layout, func(archive.Entry) error { n++; return nil }); err != nil {
		return err
	}
	verb := "move"
	if opts.DryRun {
		verb = "would move"
	}
	fmt.Fprintf(f.IO.ErrOut, "migrate-legacy: %s %s of %s into date folders\n", verb, output.Plural(n, "legacy object"), loc)
	if n == 0 {
		return nil
	}
	if !opts.DryRun {
		opts.audit.prepare(store, layout, audit.Target{Archive: loc.String()}, nil, map[string]int{"objects": n})
		opts.audit.planLine(f.IO.ErrOut)
	}
	if !opts.DryRun && !opts.Yes {
		ok, err := cmdutil.Confirm(f.IO, fmt.Sprintf("Move %s?", output.Plural(n, "object")), "yes")
		if err != nil {
			return err
		}
		if !ok {
			fmt.Fprintln(f.IO.ErrOut, "nothing moved")
			return cmdutil.ErrNotConfirmed
		}
	}
	message, err := migrateMessages(ctx, f, opts.Offline, loc)
	if err != nil {
		return err
	}
	if !opts.DryRun {
		if err := opts.audit.begin(ctx, f.callerIdentity(loc.Bucket != "" || !opts.Offline)); err != nil {
			return err
		}
	}
	err = migrateObjects(ctx, opts, store, layout, message)
	return err
}

// migrateObjects moves the legacy objects, prints each one's outcome and
// the summary, and finishes the audit record.
func migrateObjects(ctx context.Context, opts *MigrateOptions, store archive.Store, layout dla.Layout, message dla.MessageFunc) (err error) {
	f := opts.Factory
	counts := map[string]int{}
	var mu sync.Mutex
	defer func() {
		mu.Lock()
		c := make(map[string]int, len(counts))
		for k, v := range counts {
			c[strings.ReplaceAll(k, " ", "_")] = v
		}
		mu.Unlock()
		opts.audit.finish(ctx, c, err, ctx.Err() != nil)
	}()

	var print func(MigrateResult) error
	closeOut := func() error { return nil }
	switch opts.Output.Value {
	case "json", "ndjson":
		js := output.NewJSONStream(output.JSONOut(f.IO), opts.Output.Value == "ndjson")
		print = func(r MigrateResult) error { return js.Write(r) }
		closeOut = js.Close
	default:
		esc := output.EscapeFor(f.IO.IsStdoutTTY())
		t := output.NewTable(f.IO, "RESULT", "KEY", "TARGET", "ERROR")
		root := layout.Root()
		rel := func(k *string) string {
			if k == nil {
				return "-"
			}
			return esc((*k)[len(root):])
		}
		print = func(r MigrateResult) error {
			e := "-"
			if r.Error != nil {
				e = esc(*r.Error)
			}
			return t.Row(r.Result, rel(&r.Key), rel(r.Target), e)
		}
		closeOut = t.Flush
	}

	var printErr error
	report := func(r MigrateResult) {
		if !opts.DryRun {
			opts.audit.add(migrateItem(r))
		}
		mu.Lock()
		defer mu.Unlock()
		counts[r.Result]++
		if printErr == nil {
			printErr = print(r)
		}
	}
	m := &legacymigrate.Migrator{Store: store, Layout: layout, Message: message, DryRun: opts.DryRun}
	runErr := m.Run(ctx, opts.Concurrency, func(r MigrateResult) error {
		report(r)
		mu.Lock()
		defer mu.Unlock()
		return printErr
	})
	if err := closeOut(); err != nil && runErr == nil {
		runErr = err
	}
	if runErr != nil {
		return runErr
	}
	done := "moved"
	if opts.DryRun {
		done = "planned"
	}
	// Two lines, so that the summary fits 80 columns.
	fmt.Fprintf(f.IO.ErrOut, "migrate-legacy: %d %s, %d already moved by another run;\n  left in place: %d unreadable, %d failed\n",
		counts[done], done, counts["already moved"]+counts["gone"], counts["unreadable"], counts["failed"])
	switch {
	case counts["failed"] > 0:
		return &cmdutil.ExitError{Code: cmdutil.ExitFailure}
	case counts["unreadable"] > 0:
		return cmdutil.PartialError
	}
	return nil
}

// migrateItem is one legacy object's outcome, for the audit record.
func migrateItem(r MigrateResult) audit.Item {
	it := audit.Item{Key: r.Key, Result: r.Result, Action: "left"}
	if r.Target != nil {
		it.MovedTo = *r.Target
	}
	switch r.Result {
	case "moved", "already moved":
		it.Action = "moved"
	case "gone":
		it.Action = "gone"
	}
	if r.Error != nil {
		it.Error = *r.Error
	}
	return it
}

// migrateMessages is the Cumulus message lookup of the hoist: the one
// recovery uses (Step Functions and S3 reads), or none with --offline.
func migrateMessages(ctx context.Context, f *Factory, offline bool, loc archive.Location) (dla.MessageFunc, error) {
	var sfn recovery.StepFunctions
	var objs recovery.Objects
	if !offline {
		cfg, err := awsconfig.Load(ctx, *f.AWS)
		if err != nil {
			return nil, fmt.Errorf("%w (migrate-legacy reads Step Functions and S3; --offline runs without them)", err)
		}
		sfn = awsread.StepFunctions{Client: awsconfig.SFN(cfg, *f.AWS)}
		objs = awsread.Objects{Client: awsconfig.S3(cfg, *f.AWS), ReplaceBucket: loc.Bucket}
	}
	return recovery.MessageFunc(ctx, sfn, objs), nil
}
