package dlacmd

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sync"

	"github.com/spf13/cobra"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/awsconfig"
	"github.com/deadletter/deadletter/internal/awsread"
	"github.com/deadletter/deadletter/internal/cli/cmdutil"
	"github.com/deadletter/deadletter/internal/cli/output"
	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/recovery"
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
}

// migrateLockKey is the lock object of migrate-legacy in an archive.
func migrateLockKey(layout dla.Layout) string { return layout.Root() + "locks/migrate-legacy.json" }

// NewCmdMigrateLegacy builds `dla migrate-legacy`.
func NewCmdMigrateLegacy(f *Factory, runF func(context.Context, *MigrateOptions) error) *cobra.Command {
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
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.Output.Validate(); err != nil {
				return err
			}
			if opts.Concurrency < 1 || opts.Concurrency > 256 {
				return cmdutil.UsageErrorf("--concurrency must be between 1 and 256, not %d", opts.Concurrency)
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runMigrate(cmd.Context(), opts)
		},
	}
	opts.Archive.register(cmd)
	fl := cmd.Flags()
	fl.BoolVar(&opts.DryRun, "dry-run", false, "show where each object would go; change nothing")
	fl.BoolVarP(&opts.Yes, "yes", "y", false, "do not ask for confirmation (required when stdin or stderr is not a terminal)")
	fl.BoolVar(&opts.Offline, "offline", false, "no Step Functions or S3 reads for the Cumulus message: its fields stay null where they need one")
	fl.IntVar(&opts.Concurrency, "concurrency", 8, "objects moved at once")
	fl.BoolVar(&opts.BreakLock, "break-lock", false, "remove the lock another migrate-legacy left (one that is not running) before taking it")
	opts.Output = cmdutil.AddOutputFlag(cmd, "table", "json", "ndjson")
	return cmd
}

// MigrateResult is one legacy object's outcome (-o json/ndjson).
type MigrateResult struct {
	Key    string  `json:"key"`
	Target *string `json:"target"`
	// Result: planned (--dry-run), moved, already moved (by a concurrent
	// run, to the same copy), gone (listed, then moved by another run
	// before this one reached it), unreadable or failed.
	Result string  `json:"result"`
	Error  *string `json:"error"`
}

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
		if opts.BreakLock {
			if err := archive.BreakLock(ctx, store, migrateLockKey(layout)); err != nil {
				return err
			}
		}
		// One run at a time: two would race for each object (both copy,
		// both delete, each counting it moved).
		release, err := archive.TakeLock(ctx, store, migrateLockKey(layout), "dla migrate-legacy")
		if err != nil {
			return err
		}
		defer release()
	}
	// The plan: how many legacy objects there are (listing only).
	n := 0
	if err := listLegacy(ctx, store, layout, func(archive.Entry) error { n++; return nil }); err != nil {
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
	if !opts.DryRun && !opts.Yes {
		ok, err := cmdutil.Confirm(f.IO, fmt.Sprintf("Move %s?", output.Plural(n, "object")), "yes")
		if err != nil {
			return err
		}
		if !ok {
			return cmdutil.UsageErrorf("not confirmed; nothing was moved")
		}
	}
	message, err := migrateMessages(ctx, f, opts.Offline, loc)
	if err != nil {
		return err
	}

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

	counts := map[string]int{}
	var printErr error
	var mu sync.Mutex
	report := func(r MigrateResult) {
		mu.Lock()
		defer mu.Unlock()
		counts[r.Result]++
		if printErr == nil {
			printErr = print(r)
		}
	}
	m := migrator{store: store, layout: layout, message: message, dryRun: opts.DryRun}
	runErr := eachConcurrently(ctx, opts.Concurrency, func(yield func(archive.Entry) error) error {
		return listLegacy(ctx, store, layout, yield)
	}, func(e archive.Entry) error {
		r := m.migrate(ctx, e)
		if ctx.Err() != nil && r.Result == "failed" {
			return ctx.Err() // interrupted: not a failure of this object
		}
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
	fmt.Fprintf(f.IO.ErrOut, "migrate-legacy: %d %s, %d already moved by another run, %d unreadable (left in place), %d failed (left in place)\n",
		counts[done], done, counts["already moved"]+counts["gone"], counts["unreadable"], counts["failed"])
	switch {
	case counts["failed"] > 0:
		return &cmdutil.ExitError{Code: cmdutil.ExitFailure}
	case counts["unreadable"] > 0:
		return cmdutil.PartialError
	}
	return nil
}

// listLegacy yields every legacy object of sqs/: the flat objects at its
// top, and every object under a folder that is not a date.
func listLegacy(ctx context.Context, store archive.Store, layout dla.Layout, yield func(archive.Entry) error) error {
	root := layout.AreaPrefix(dla.AreaSQS)
	return store.List(ctx, root, true, func(e archive.Entry) error {
		name := e.Key[len(root):]
		if !e.IsPrefix {
			if dla.IsDate(name) || name == "" {
				return nil // a date folder's marker or a link named like one: not legacy
			}
			return yield(e)
		}
		if dla.IsDate(name[:len(name)-1]) {
			return nil
		}
		return store.List(ctx, e.Key, false, func(e archive.Entry) error {
			if e.Key[len(e.Key)-1] == '/' {
				return nil // a folder marker
			}
			return yield(e)
		})
	})
}

// migrator moves one legacy object.
type migrator struct {
	store   archive.Store
	layout  dla.Layout
	message dla.MessageFunc
	dryRun  bool
}

func (m *migrator) migrate(ctx context.Context, e archive.Entry) MigrateResult {
	r := MigrateResult{Key: e.Key}
	fail := func(result string, err error) MigrateResult {
		r.Result = result
		s := err.Error()
		r.Error = &s
		return r
	}
	raw, err := m.store.Get(ctx, e.Key)
	if errors.Is(err, archive.ErrNotFound) {
		r.Result = "gone" // listed, then moved by another run
		return r
	}
	if err != nil {
		return fail("failed", err)
	}
	h, err := dla.Hoist(raw, m.message)
	if err != nil { // a Step Functions or S3 read a retry may cure
		return fail("failed", err)
	}
	if h.Raw {
		return fail("unreadable", errors.New(h.Reason))
	}
	date, ok := dla.EventDate(h.Time)
	if !ok { // no time a date folder can name: the day it was archived
		modified := e.LastModified
		if modified.IsZero() {
			st, err := m.store.Stat(ctx, e.Key)
			if err != nil {
				return fail("failed", err)
			}
			modified = st.LastModified
		}
		date = modified.UTC().Format(dla.DateLayout)
		if modified.IsZero() || !dla.IsDate(date) {
			return fail("failed", errors.New("no event time and no last-modified date to date it by"))
		}
	}
	target := m.layout.DatePrefix(dla.AreaSQS, date) + path.Base(e.Key)
	r.Target = &target
	if m.dryRun {
		r.Result = "planned"
		return r
	}
	moved, err := archive.MoveAs(ctx, m.store, e.Key, target, raw, h.JSON)
	if moved != "" {
		r.Target = &moved
	}
	if moved == "" && errors.Is(err, archive.ErrNotFound) {
		r.Target, r.Result = nil, "gone" // read, then moved by another run before this one copied it
		return r
	}
	if errors.Is(err, archive.ErrSourceGone) && moved != "" {
		// Another run (a concurrent migrate-legacy) moved it meanwhile.
		// When the copy at moved is a copy of this key (its origin), both
		// runs met at that one copy: nothing is doubled, nothing left.
		if st, serr := m.store.Stat(ctx, moved); serr == nil && st.Origin == archive.Origin(e.Key) {
			r.Result = "already moved"
			return r
		}
	}
	if err != nil {
		return fail("failed", err)
	}
	r.Result = "moved"
	return r
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

// eachConcurrently hands each item list yields to do, n at a time, and
// stops at the first error (after the calls in flight end).
func eachConcurrently[T any](ctx context.Context, n int, list func(yield func(T) error) error, do func(T) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	items := make(chan T)
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range items {
				if err := do(it); err != nil {
					cancel(err)
				}
			}
		}()
	}
	listErr := list(func(it T) error {
		select {
		case items <- it:
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	})
	close(items)
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return err
	}
	return listErr
}
