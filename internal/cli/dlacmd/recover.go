package dlacmd

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/spf13/cobra"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/audit"
	"github.com/deadletter/deadletter/internal/awsconfig"
	"github.com/deadletter/deadletter/internal/cli/cmdutil"
	"github.com/deadletter/deadletter/internal/cli/output"
	"github.com/deadletter/deadletter/internal/selection"
	"github.com/deadletter/deadletter/internal/snspub"
	"github.com/deadletter/deadletter/internal/workflow/dbwrite"
	"github.com/deadletter/deadletter/internal/workflow/dlarecover"
)

// RecoverOptions are dla recover's inputs.
type RecoverOptions struct {
	Factory         *Factory
	given           []string // the flags given, for the re-run an interrupt prints
	Select          selectFlags
	Output          *cmdutil.Output
	Args            []string
	DatabaseURL     string
	DBSecret        string
	DBMaxPool       int
	DryRun          bool
	Keep            bool
	Yes             bool
	Verbose         bool
	LeaveUnreadable bool
	// IncludeUnreadable moves unreadable objects to failed-sqs even when a
	// content filter is given (which cannot tell whether they match).
	IncludeUnreadable bool
	Null              bool // keys on stdin are NUL-separated
	Offline           bool
	// SNS topic ARNs (default: v21's environment names).
	Topics snspub.Topics
	// ViaAPI is a Cumulus API URL: recover through Cumulus's own recovery
	// (viaapi.go), with the token from TokenFile or $CUMULUS_API_TOKEN.
	ViaAPI, TokenFile, CleanupStaging string
	Cleanup                           bool
	// Audit are --reason and --no-audit; audit is the run's record
	// (audit.go), made when the command runs.
	Audit cmdutil.AuditFlags
	audit *dlaAudit
}

// NewCmdRecover builds `dla recover`.
func NewCmdRecover(f *Factory) *cobra.Command {
	opts := &RecoverOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "recover [flags] [KEY... | -]",
		Short: "Re-run Cumulus's database writes for archived messages, then delete or move them",
		Long: `Recover archive objects into the Cumulus PostgreSQL database with the write
rules of Cumulus's sfEventSqsToDbRecords (execution, PDR, granules, files,
and every write constraint) of the release the database is: v21 and earlier,
or v22's partitioned tables (v22.0 to v22.3), read from its catalog and shown
in the plan. An unknown or half-migrated schema (exit 2), a read-only
database or a role without the privileges is refused before anything moves.
Then:

  written or dropped   the object is deleted (a dropped write is a stale
                       update the constraints refused, as in Cumulus)
  failed               the object is copied to failed-sqs/<event date>/<name>
                       (<name>.1, .2 ... when another object has that name:
                       nothing is ever replaced) and the original deleted
                       once the copy is read back holding the same bytes
  unreadable           not JSON at all: moved to failed-sqs like a failure,
                       unless --leave-unreadable; with a content filter
                       (--granule, --collection, --execution, --status,
                       --state-machine, --error, --error-class) they are left alone, since
                       nobody can say whether they match, unless
                       --include-unreadable
  database or AWS down the object stays where it is; the run stops

Objects are selected like 'dla search' (dates, granule, collection, execution,
status, error, --failed to retry failed-sqs/), or named as arguments or on
stdin with '-' (one per line, or NUL-separated with -0, as 'dla search -o keys
-0' prints them). Only archive objects under <stack>/dead-letter-archive/ are
read, moved or deleted (a message's replace payload is read from the
archive's own bucket only); a local archive's symbolic links are never
followed.

A plan (counts by date, status and collection, the database it will write
to, how many Step Functions calls it needs) comes first, then a
confirmation unless --yes.

--dry-run writes each object inside a transaction that is rolled back, so it
reports exactly what would be written, dropped or fail, and changes nothing
(in the database or the archive). --keep writes but never deletes or moves.

The database is --database-url, else $DATABASE_URL, else the PG* variables
(PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE), or --db-secret, a Secrets
Manager secret holding host, port, username, password and database (how
Cumulus stores its login). Passwords never appear in output. A database
error that is not the message's (read-only, privileges, a missing table,
column or partition, a lost connection) stops the run with the object in
place; only the message's own (bad data, a constraint) moves it.

Step Functions (processing times, the failed step's output) and S3 (CMR
files, file sizes, messages held in S3) are read with the AWS settings;
--offline skips those reads. Where Cumulus v21 differs, see docs/recover.md:
an execution whose history expired is written without processing times
instead of failing, and unreadable objects are moved, not left behind.

SNS: given the three topic ARNs (--execution-sns-topic-arn,
--granule-sns-topic-arn, --pdr-sns-topic-arn, or Cumulus's environment
names execution_sns_topic_arn, granule_sns_topic_arn, pdr_sns_topic_arn;
all three or none), recover publishes what Cumulus v21 publishes after each
write: the execution, the PDR, and each granule written ({"event":"Update",
"record":...}), built from the rows the database returned. A publish that
fails after its write leaves the object in place and stops the run, like
any AWS failure; a re-run writes it again and publishes. A dry run
publishes nothing and counts what it would publish. Without topics,
nothing is published.

Only one recover of an archive runs at a time against a database: a second
one exits 1 at once (a PostgreSQL advisory lock keyed by the archive; a dry
run takes none).

Interrupting (Ctrl-C, SIGTERM) lets the objects in flight finish, deletes
what was written, and stops; a re-run picks up the rest (the writes are
idempotent upserts).

Through the Cumulus API (--via-api URL): Cumulus's own recovery runs
instead, as an async operation, with the token from --token-file or
$CUMULUS_API_TOKEN (never from a flag, never printed). The same plan and
confirmation come first; then the selected objects are moved (copy, read
back, delete) into a staging folder of their own,
<stack>/dead-letter-archive/recover-staging/<run>/, which becomes the
recovery's path; Cumulus writes them, deletes what it wrote and moves what
failed to failed-sqs/<date>/<name> as it always does. The operation is
polled until it ends; what it left in staging (objects it could not parse)
is listed, and --cleanup moves it back. Exit 0 when everything was
recovered, 3 when objects failed or are left, 1 when the operation failed.
After Ctrl-C the operation goes on in Cumulus; --cleanup-staging FOLDER
later moves back what it left.`,
		Example: `  dla recover --archive s3://my-internal-bucket/my-stack --date 2024-03-02 --dry-run
  dla recover --archive s3://my-internal-bucket/my-stack --error UnmetRequirementsError --yes -o ndjson
  dla search --granule G1 -o keys | dla recover --yes -
  dla recover --failed --from 2024-03-01 --db-secret my-stack-db-login --yes
  dla recover --archive s3://my-internal-bucket/my-stack --date 2024-03-02 --via-api https://example.com/api --token-file ~/.cumulus-token --cleanup`,
		Args: cmdutil.UsageArgs(cobra.ArbitraryArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Validate(); err != nil {
				return err
			}
			opts.Args = args
			opts.given = cmdutil.GivenFlags(cmd)
			opts.audit = newDLAAudit(cmd, args, opts.Audit, f)
			return cmdutil.MutationError(runRecover(cmd.Context(), opts))
		},
	}
	opts.Select.register(cmd)
	fl := cmd.Flags()
	// 32 objects at once: with every service 2 ms away (a bastion or
	// CloudShell in the region), 1,800 objects took 9.8-10.1 s against
	// 15.0-15.9 s at 8, and the same 8.0-8.4 s with no delay, where the two
	// cores are the limit; Cumulus's own recovery runs 30 at once.
	// The pool grows to 34 connections (--db-max-pool); a database with no
	// slot for one more stops the run with the objects in place, saying to
	// lower --concurrency or --db-max-pool (53300) (docs/performance.md,
	// "Over a network").
	opts.Select.concurrency = 32
	fl.Lookup("concurrency").DefValue = "32"
	fl.Lookup("concurrency").Usage = "objects written at once"
	fl.StringVar(&opts.DatabaseURL, "database-url", "", "PostgreSQL connection string (default $DATABASE_URL, else the PG* variables)")
	fl.StringVar(&opts.DBSecret, "db-secret", "", "Secrets Manager secret (ARN or name) with the database login")
	fl.IntVar(&opts.DBMaxPool, "db-max-pool", 0, "database connections at most (default: --concurrency + 2)")
	fl.BoolVar(&opts.DryRun, "dry-run", false, "write inside rolled-back transactions and report; change nothing")
	fl.BoolVar(&opts.Keep, "keep", false, "write, but never delete or move archive objects")
	fl.BoolVarP(&opts.Yes, "yes", "y", false, "do not ask for confirmation")
	fl.BoolVarP(&opts.Verbose, "verbose", "v", false, "name every unreadable object on stderr, not only the first 5")
	fl.BoolVar(&opts.LeaveUnreadable, "leave-unreadable", false, "leave objects that are not JSON where they are instead of moving them to failed-sqs")
	fl.BoolVar(&opts.IncludeUnreadable, "include-unreadable", false, "with a content filter (--granule, --collection, --execution, --status, --state-machine, --error, --error-class), also move the unreadable objects of the dates listed to failed-sqs (by default they are left alone)")
	fl.BoolVar(&opts.Offline, "offline", false, "no Step Functions or S3 reads: no processing times, failed-step output, CMR dates, file sizes or S3-held messages")
	fl.StringVar(&opts.Topics.Execution, "execution-sns-topic-arn", "", "publish execution notifications to this SNS topic (default $execution_sns_topic_arn)")
	fl.StringVar(&opts.Topics.Granule, "granule-sns-topic-arn", "", "publish granule notifications to this SNS topic (default $granule_sns_topic_arn)")
	fl.StringVar(&opts.Topics.Pdr, "pdr-sns-topic-arn", "", "publish PDR notifications to this SNS topic (default $pdr_sns_topic_arn)")
	fl.StringVar(&opts.ViaAPI, "via-api", "", "recover through Cumulus's own recovery: the Cumulus API at this URL (see 'Through the Cumulus API' above)")
	fl.StringVar(&opts.TokenFile, "token-file", "", "with --via-api, read the API token from this file (default $CUMULUS_API_TOKEN)")
	fl.BoolVar(&opts.Cleanup, "cleanup", false, "with --via-api, move what Cumulus left in the staging folder back where it came from")
	fl.StringVar(&opts.CleanupStaging, "cleanup-staging", "", "with --via-api, only move everything in this staging folder (a prefix a stopped run named) back; nothing else")
	addNullFlag(cmd, &opts.Null)
	cmdutil.AddAuditFlags(cmd, &opts.Audit, false)
	opts.Output = cmdutil.AddOutputFlag(cmd, "text", "json", "ndjson")
	return cmd
}

// ObjectResult is one object's line in -o ndjson.
type ObjectResult = dlarecover.Object

// RecoverSummary is the summary record.
type RecoverSummary = dlarecover.Summary

func runRecover(ctx context.Context, opts *RecoverOptions) error {
	f := opts.Factory
	if opts.ViaAPI != "" {
		return runRecoverViaAPI(ctx, opts)
	}
	topics, scope, loc, err := validateRecover(opts)
	if err != nil {
		return err
	}
	store, err := f.OpenArchive(ctx, loc)
	if err != nil {
		return err
	}
	dburl := opts.DatabaseURL
	if dburl == "" && opts.DBSecret == "" {
		dburl = f.Getenv("DATABASE_URL")
	}
	progress := cmdutil.NewProgress(f.IO.ErrOut, f.IO.ShowProgress())
	// The run, handed its options once: the database and the lock come
	// before the plan (dlarecover.Open), the spools with it (Plan), the
	// tuning and the writes after the confirmation (Run).
	sess, err := dlarecover.Open(ctx, dlarecover.Options{
		Store: store, Location: loc, Scope: scope, IncludeUnreadable: opts.IncludeUnreadable,
		DatabaseURL: dburl, DBSecret: opts.DBSecret, MaxPool: opts.DBMaxPool,
		AWS:      func() (aws.Config, error) { return awsconfig.Load(ctx, *f.AWS) },
		Settings: *f.AWS, Offline: opts.Offline, Topics: topics,
		DryRun: opts.DryRun, Keep: opts.Keep, LeaveUnreadable: opts.LeaveUnreadable,
		Concurrency: opts.Select.concurrency, Now: f.Now,
		StopPlan:     stopOnAuth,
		PlanProgress: func(n int) { progress.Update("planning: %d objects", n) },
		Progress: func(s *RecoverSummary) {
			progress.Update("recovering: %d/%d objects, %d written, %d failed", s.Processed, s.Selected, s.Written+s.Dropped, s.Failed)
			progress.Clear()
		},
		Explain: cmdutil.ErrorLine,
		Warnf: func(format string, args ...any) {
			fmt.Fprintf(f.IO.ErrOut, "dla: %s\n", output.Escape(fmt.Sprintf(format, args...)))
		},
		// Each object's item goes to the audit record as soon as its move
		// or delete is done (a record that was not begun takes none).
		Acted: func(o ObjectResult) { opts.audit.add(o.AuditItem()) },
	})
	if err != nil {
		return interruptedBeforeAnyChange(ctx, opts, openError(err))
	}
	defer sess.Close()

	// The plan: one pass over the selection, spooled to a file.
	plan, err := sess.Plan(ctx)
	progress.Clear()
	if err != nil {
		return interruptedBeforeAnyChange(ctx, opts, err)
	}
	return recoverPlanned(ctx, opts, sess, plan, recoverTarget{store: store, scope: scope, loc: loc, topics: topics})
}

// validateRecover checks the flags of a recover into the database, in
// the order their errors are said: those that go with --via-api only, the
// pairs that cannot be combined, the SNS topics, the selection (and
// --yes), the pool's size.
func validateRecover(opts *RecoverOptions) (snspub.Topics, selection.Scope, archive.Location, error) {
	for name, set := range map[string]bool{"--token-file": opts.TokenFile != "", "--cleanup": opts.Cleanup, "--cleanup-staging": opts.CleanupStaging != ""} {
		if set {
			return snspub.Topics{}, selection.Scope{}, archive.Location{}, cmdutil.UsageErrorf("%s goes with --via-api", name)
		}
	}
	var err error
	switch {
	case opts.LeaveUnreadable && opts.IncludeUnreadable:
		err = cmdutil.UsageErrorf("--leave-unreadable and --include-unreadable cannot be combined")
	case opts.DryRun && opts.Keep:
		err = cmdutil.UsageErrorf("--dry-run and --keep cannot be combined (a dry run keeps everything)")
	default:
		err = checkDBFlags(opts.DatabaseURL, opts.DBSecret)
	}
	if err != nil {
		return snspub.Topics{}, selection.Scope{}, archive.Location{}, err
	}
	topics, err := recoverTopics(opts)
	if err != nil {
		return topics, selection.Scope{}, archive.Location{}, err
	}
	scope, loc, err := recoverScope(opts)
	if err != nil {
		return topics, scope, loc, err
	}
	if opts.DBMaxPool < 0 {
		return topics, scope, loc, cmdutil.UsageErrorf("--db-max-pool must not be negative")
	}
	return topics, scope, loc, nil
}

// recoverTarget is what a recover into the database reads and writes:
// the archive, the selection, and the SNS topics.
type recoverTarget struct {
	store  archive.Store
	scope  selection.Scope
	loc    archive.Location
	topics snspub.Topics
}

// recoverPlanned is a recover once its plan is made: the plan printed and
// prepared for the audit record, the confirmation, the record begun, the
// objects recovered, the record finished.
func recoverPlanned(ctx context.Context, opts *RecoverOptions, sess *dlarecover.Session, plan *dlarecover.Plan, t recoverTarget) error {
	f := opts.Factory
	db := poolDatabase(sess.DatabaseConfig())
	db.Generation = sess.Generation()
	opts.audit.prepare(t.store, t.scope.Layout, audit.Target{Archive: t.loc.String(), Database: db},
		selectionOf(&opts.Select, len(t.scope.Keys)), recoverPlanCounts(plan))
	printPlan(f.IO.ErrOut, plan, opts, t.topics)
	if plan.Objects == 0 {
		fmt.Fprintln(f.IO.ErrOut, "nothing to recover")
		return writeSummary(opts, sess.Summary())
	}
	recoverAuditLine(opts)
	if !opts.DryRun && !opts.Yes {
		ok, err := cmdutil.Confirm(f.IO, recoverQuestion(plan, opts), "yes")
		if err != nil || !ok {
			fmt.Fprintln(f.IO.ErrOut, "nothing written, nothing changed")
			return cmp.Or(err, error(cmdutil.ErrNotConfirmed))
		}
	}
	if !opts.DryRun {
		// The record goes down before the first write: a record that
		// cannot be written refuses the run, nothing changed.
		if err := opts.audit.begin(ctx, f.callerIdentity(t.loc.Bucket != "" || !opts.Offline || opts.DBSecret != "" || !t.topics.None())); err != nil {
			return err
		}
	}
	sum, err := runRecoverObjects(ctx, opts, sess)
	if sum != nil {
		opts.audit.finish(ctx, recoverCounts(sum), err, ctx.Err() != nil || sum.Interrupted)
	} else {
		opts.audit.finish(ctx, nil, err, ctx.Err() != nil)
	}
	return err
}

// recoverPlanCounts are the plan's counts, for the audit record.
func recoverPlanCounts(p *dlarecover.Plan) map[string]int {
	c := map[string]int{"objects": p.Objects, "unreadable": p.Unreadable}
	if p.LeftAlone > 0 {
		c["unreadable_left_alone"] = p.LeftAlone
	}
	for st, n := range p.ByStatus {
		c["status "+st] = n
	}
	return c
}

// recoverCounts are the summary's counts, for the audit record.
func recoverCounts(s *RecoverSummary) map[string]int {
	return map[string]int{"selected": s.Selected, "processed": s.Processed, "written": s.Written, "dropped": s.Dropped,
		"failed": s.Failed, "unreadable": s.Unreadable, "left": s.Left, "gone_elsewhere": s.GoneElsewhere,
		"not_processed": s.NotProcessed, "deleted": s.Deleted, "moved": s.Moved}
}

// openError is the error of a run dlarecover.Open would not start: what
// to check for each stage of the setup, and a usage error (exit 2) for a
// flag's.
func openError(err error) error {
	switch dbwrite.StageOf(err) {
	case dbwrite.StageConnString, dbwrite.StageTopics:
		return cmdutil.UsageErrorf("%v", err)
	case dbwrite.StageNotifier:
		return fmt.Errorf("%w (recover publishes to the SNS topics given)", err)
	case dbwrite.StageReads:
		return fmt.Errorf("%w (recover reads Step Functions and S3; --offline runs without them)", err)
	case dbwrite.StageDatabase:
		return refuseDatabase(err)
	}
	return err
}

// recoverScope validates the selection (flags, or keys as arguments or on
// stdin) and the --yes rule.
func recoverScope(opts *RecoverOptions) (selection.Scope, archive.Location, error) {
	f := opts.Factory
	scope, loc, err := opts.Select.scope(f)
	if err != nil {
		return scope, loc, err
	}
	// A written object is deleted only while it still holds the bytes
	// that were read (and written): the plan's digest travels with it.
	scope.Digest = true
	if len(opts.Args) > 0 {
		keys, err := readKeys(f.IO.In, opts.Args, opts.Null)
		if err != nil {
			return scope, loc, err
		}
		if keys, err = selection.ResolveKeys(loc, scope.Layout, keys); err != nil {
			return scope, loc, keyUsage(err)
		}
		scope.Keys = keys
	}
	if !opts.DryRun {
		if err := cmdutil.RequireYes(f.IO, opts.Yes, "recover"); err != nil {
			return scope, loc, err
		}
	}
	return scope, loc, nil
}

// recoverTopics are the SNS topic ARNs: the flags, else v21's environment
// names; all three or none.
func recoverTopics(opts *RecoverOptions) (snspub.Topics, error) {
	t := opts.Topics
	for _, p := range []*string{&t.Execution, &t.Granule, &t.Pdr} {
		*p = strings.TrimSpace(*p)
	}
	env := snspub.TopicsFromEnv(opts.Factory.Getenv)
	if t.Execution == "" {
		t.Execution = env.Execution
	}
	if t.Granule == "" {
		t.Granule = env.Granule
	}
	if t.Pdr == "" {
		t.Pdr = env.Pdr
	}
	if t.None() {
		return t, nil
	}
	if missing := t.Missing(); len(missing) > 0 {
		for i, name := range missing {
			missing[i] = fmt.Sprintf("--%s ($%s)", strings.ReplaceAll(name, "_", "-"), name)
		}
		return t, cmdutil.UsageErrorf("SNS topics go together, all three or none: missing %s", strings.Join(missing, ", "))
	}
	if err := t.Validate(); err != nil {
		return t, cmdutil.UsageErrorf("%v", err)
	}
	return t, nil
}

// runRecoverObjects runs the workflow over the planned keys, printing each
// object's result as it comes, then the summary.
func runRecoverObjects(ctx context.Context, opts *RecoverOptions, sess *dlarecover.Session) (*RecoverSummary, error) {
	f := opts.Factory
	var emit func(ObjectResult) error
	closeOut := func() error { return nil }
	switch opts.Output.Value {
	case "json", "ndjson":
		js := output.NewJSONStream(output.JSONOut(f.IO), opts.Output.Value == "ndjson")
		emit, closeOut = func(o ObjectResult) error { return js.Write(o) }, js.Close
	default:
		w := output.TerminalOut(f.IO) // archive text is escaped on a terminal
		width := f.IO.TerminalWidth() // 0 when piped: one line per object, as before
		emit = func(o ObjectResult) error { return printObjectText(w, o, width) }
	}
	// Exit 3's promise: each unreadable object is named on stderr with its
	// reason, whatever stdout carries (the first few and a count; -v: all).
	unreadable := 0
	var emitErr error
	sum, err := sess.Run(ctx, func(o ObjectResult) error {
		if o.Result == dlarecover.ResultUnreadable {
			unreadable++
			if opts.Verbose || unreadable <= unreadableShown {
				fmt.Fprintf(f.IO.ErrOut, "dla: unreadable %s: %s\n", output.Escape(textKey(o.Key)), output.Escape(output.OneLine(o.Error)))
			}
		}
		emitErr = emit(o)
		return emitErr
	})
	if hidden := unreadable - unreadableShown; !opts.Verbose && hidden > 0 {
		fmt.Fprintf(f.IO.ErrOut, "dla: %s not listed (-v lists every one)\n", output.Plural(hidden, "more unreadable object"))
	}
	outErr := emitErr
	if cerr := closeOut(); cerr != nil && outErr == nil {
		outErr = cerr
	}
	if werr := writeSummary(opts, sum); werr != nil && outErr == nil {
		outErr = werr
	}
	if ctx.Err() != nil && !opts.DryRun {
		printRecoverInterrupted(opts, sum)
	}
	var stopped *dlarecover.StoppedError
	switch {
	case outErr != nil:
		return sum, outErr
	case errors.As(err, &stopped):
		return sum, &cmdutil.ExitError{Code: cmdutil.ExitPartial, Err: fmt.Errorf("stopped: %v; %s not processed, left in place: re-run to continue", stopped.Err, output.Plural(stopped.Left, "object"))}
	case err != nil:
		return sum, err
	}
	// --ignore-unreadable: the unreadable objects are still named and
	// counted, but are no reason for exit 3 (as in search, stats, triage).
	if sum.Failed > 0 || (sum.Unreadable > 0 && !opts.Select.ignoreUnreadable) || sum.Left > 0 {
		return sum, cmdutil.PartialError
	}
	return sum, nil
}
