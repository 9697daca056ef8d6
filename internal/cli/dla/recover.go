package dla

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/awsconfig"
	"github.com/deadletter/deadletter/internal/awsread"
	"github.com/deadletter/deadletter/internal/cli/cmdutil"
	"github.com/deadletter/deadletter/internal/cli/output"
	"github.com/deadletter/deadletter/internal/cumulusdb"
	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/recovery"
	"github.com/deadletter/deadletter/internal/selection"
)

// RecoverOptions are dla recover's inputs.
type RecoverOptions struct {
	Factory         *Factory
	Select          selectFlags
	Output          *cmdutil.Output
	Args            []string
	DatabaseURL     string
	DBSecret        string
	DBMaxPool       int
	DryRun          bool
	Keep            bool
	Yes             bool
	LeaveUnreadable bool
	// IncludeUnreadable moves unreadable objects to failed-sqs even when a
	// content filter is given (which cannot tell whether they match).
	IncludeUnreadable bool
	Null              bool // keys on stdin are NUL-separated
	Offline           bool
}

// NewCmdRecover builds `dla recover`.
func NewCmdRecover(f *Factory, runF func(*cobra.Command, *RecoverOptions) error) *cobra.Command {
	opts := &RecoverOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "recover [flags] [KEY... | -]",
		Short: "Re-run Cumulus's database writes for archived messages, then delete or move them",
		Long: `Recover archive objects into the Cumulus PostgreSQL database with the write
rules of Cumulus v21's sfEventSqsToDbRecords (execution, PDR, granules, files,
and every write constraint), then:

  written or dropped   the object is deleted (a dropped write is a stale
                       update the constraints refused, as in Cumulus)
  failed               the object is copied to failed-sqs/<event date>/<name>
                       (<name>.1, .2 ... when another object has that name:
                       nothing is ever replaced) and the original deleted
                       once the copy is read back holding the same bytes
  unreadable           not JSON at all: moved to failed-sqs like a failure,
                       unless --leave-unreadable; with a content filter
                       (--granule, --collection, --execution, --status,
                       --state-machine, --error) they are left alone, since
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
Cumulus stores its login). Passwords never appear in output.

Step Functions (processing times, the failed step's output) and S3 (CMR
files, file sizes, messages held in S3) are read with the AWS settings;
--offline skips those reads. Where Cumulus v21 differs, see docs/recover.md:
an execution whose history expired is written without processing times
instead of failing, and unreadable objects are moved, not left behind.
No SNS notifications are published.

Only one recover of an archive runs at a time against a database: a second
one exits 1 at once (a PostgreSQL advisory lock keyed by the archive; a dry
run takes none).

Interrupting (Ctrl-C, SIGTERM) lets the objects in flight finish, deletes
what was written, and stops; a re-run picks up the rest (the writes are
idempotent upserts).`,
		Example: `  dla recover --archive s3://my-internal-bucket/my-stack --date 2024-03-02 --dry-run
  dla recover --archive s3://my-internal-bucket/my-stack --error UnmetRequirementsError --yes -o ndjson
  dla search --granule G1 -o keys | dla recover --yes -
  dla recover --failed --from 2024-03-01 --db-secret my-stack-db-login --yes`,
		Args: cmdutil.UsageArgs(cobra.ArbitraryArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Validate(); err != nil {
				return err
			}
			opts.Args = args
			if runF != nil {
				return runF(cmd, opts)
			}
			return runRecover(cmd, opts)
		},
	}
	opts.Select.register(cmd)
	fl := cmd.Flags()
	opts.Select.concurrency = 8
	fl.Lookup("concurrency").DefValue = "8"
	fl.Lookup("concurrency").Usage = "objects written at once"
	fl.StringVar(&opts.DatabaseURL, "database-url", "", "PostgreSQL connection string (default $DATABASE_URL, else the PG* variables)")
	fl.StringVar(&opts.DBSecret, "db-secret", "", "Secrets Manager secret (ARN or name) with the database login")
	fl.IntVar(&opts.DBMaxPool, "db-max-pool", 0, "database connections at most (default: --concurrency + 2)")
	fl.BoolVar(&opts.DryRun, "dry-run", false, "write inside rolled-back transactions and report; change nothing")
	fl.BoolVar(&opts.Keep, "keep", false, "write, but never delete or move archive objects")
	fl.BoolVarP(&opts.Yes, "yes", "y", false, "do not ask for confirmation")
	fl.BoolVar(&opts.LeaveUnreadable, "leave-unreadable", false, "leave objects that are not JSON where they are instead of moving them to failed-sqs")
	fl.BoolVar(&opts.IncludeUnreadable, "include-unreadable", false, "with a content filter (--granule, --collection, --execution, --status, --state-machine, --error), also move the unreadable objects of the dates listed to failed-sqs (by default they are left alone)")
	fl.BoolVar(&opts.Offline, "offline", false, "no Step Functions or S3 reads: no processing times, failed-step output, CMR dates, file sizes or S3-held messages")
	addNullFlag(cmd, &opts.Null)
	opts.Output = cmdutil.AddOutputFlag(cmd, "text", "json", "ndjson")
	return cmd
}

// recoverPlan is what the selection holds, before anything is written.
type recoverPlan struct {
	Objects    int `json:"objects"`
	Unreadable int `json:"unreadable"`
	// LeftAlone counts unreadable objects not selected: a content filter
	// cannot tell whether they match, so recover does not touch them.
	LeftAlone int            `json:"unreadable_left_alone"`
	ByDate    map[string]int `json:"by_date"`
	ByStatus  map[string]int `json:"by_status"`
	ByColl    map[string]int `json:"by_collection"`
	Describe  int            `json:"describe_execution_calls"`
	History   int            `json:"execution_history_reads"`
	Database  string         `json:"database"`
	Archive   string         `json:"archive"`
	Area      string         `json:"area"`
	spool     *selection.Spool
}

func (p *recoverPlan) add(key string, d *dla.Decoded) error {
	p.Objects++
	if err := p.spool.Add(key); err != nil {
		return err
	}
	if d == nil {
		p.Unreadable++
		return nil
	}
	p.ByDate[d.Date()]++
	p.ByStatus[orDash(d.Status)]++
	p.ByColl[orDash(d.CollectionID)]++
	if len(d.Granules) > 0 && d.ExecutionArn != "" {
		p.Describe++
	}
	switch d.Status {
	case "FAILED", "ABORTED", "TIMED_OUT", "":
		if d.Detail != "" {
			p.History++
		}
	}
	return nil
}

// ObjectResult is one object's line in -o ndjson.
type ObjectResult struct {
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
	DryRun       bool                      `json:"dry_run,omitempty"`
	res          *recovery.Result
}

// RecoverSummary is the summary record.
type RecoverSummary struct {
	Type            string  `json:"type"`
	DryRun          bool    `json:"dry_run"`
	Keep            bool    `json:"keep"`
	Database        string  `json:"database"`
	Selected        int     `json:"selected"`
	Processed       int     `json:"processed"`
	Written         int     `json:"written"`
	Dropped         int     `json:"dropped"`
	Failed          int     `json:"failed"`
	Unreadable      int     `json:"unreadable"`
	Left            int     `json:"left"`          // left in place (database/AWS unavailable, read errors)
	NotProcessed    int     `json:"not_processed"` // selected but never reached (a stop or an interrupt)
	LeftAlone       int     `json:"unreadable_left_alone"`
	Deleted         int     `json:"deleted"`
	Moved           int     `json:"moved"`
	Executions      int     `json:"executions_written"`
	Pdrs            int     `json:"pdrs_written"`
	PdrsDropped     int     `json:"pdrs_dropped"`
	GranulesWritten int     `json:"granules_written"`
	GranulesDropped int     `json:"granules_dropped"`
	GranulesFailed  int     `json:"granules_failed"`
	FilesFailed     int     `json:"granules_marked_failed_for_files"`
	NoProcTimes     int     `json:"written_without_processing_times"`
	SNS             string  `json:"sns"`
	Interrupted     bool    `json:"interrupted"`
	StoppedBy       string  `json:"stopped_by,omitempty"`
	Seconds         float64 `json:"seconds"`
}

func runRecover(cmd *cobra.Command, opts *RecoverOptions) error {
	f := opts.Factory
	ctx := cmd.Context()
	if opts.LeaveUnreadable && opts.IncludeUnreadable {
		return cmdutil.UsageErrorf("--leave-unreadable and --include-unreadable cannot be combined")
	}
	if opts.DryRun && opts.Keep {
		return cmdutil.UsageErrorf("--dry-run and --keep cannot be combined (a dry run keeps everything)")
	}
	if opts.DatabaseURL != "" && opts.DBSecret != "" {
		return cmdutil.UsageErrorf("--database-url and --db-secret cannot be combined")
	}
	scope, loc, err := opts.Select.scope(f)
	if err != nil {
		return err
	}
	if len(opts.Args) > 0 {
		keys, err := readKeys(f.IO.In, opts.Args, opts.Null)
		if err != nil {
			return err
		}
		if keys, err = resolveKeys(loc, scope.Layout, keys); err != nil {
			return err
		}
		scope.Keys = keys
	}
	if !opts.DryRun {
		if err := cmdutil.RequireYes(f.IO, opts.Yes, "recover"); err != nil {
			return err
		}
	}
	if opts.DBMaxPool < 0 {
		return cmdutil.UsageErrorf("--db-max-pool must not be negative")
	}
	store, err := f.OpenArchive(ctx, loc)
	if err != nil {
		return err
	}

	// AWS: Step Functions and S3 reads, and the database secret.
	var awsCfg *aws.Config
	loadAWS := func() (aws.Config, error) {
		if awsCfg == nil {
			cfg, err := awsconfig.Load(ctx, *f.AWS)
			if err != nil {
				return cfg, err
			}
			awsCfg = &cfg
		}
		return *awsCfg, nil
	}
	maxPool := opts.DBMaxPool
	if maxPool == 0 {
		maxPool = opts.Select.concurrency + 2
	}
	if !opts.DryRun {
		maxPool++ // the archive lock holds a connection of its own for the run
	}
	dburl := opts.DatabaseURL
	if dburl == "" && opts.DBSecret == "" {
		dburl = f.Getenv("DATABASE_URL")
	}
	poolCfg, err := cumulusdb.PoolConfig(dburl, maxPool)
	if err != nil {
		return cmdutil.UsageErrorf("%v", err)
	}
	if opts.DBSecret != "" {
		cfg, err := loadAWS()
		if err != nil {
			return err
		}
		out, err := awsconfig.SecretsManager(cfg, *f.AWS).GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(opts.DBSecret)})
		if err != nil {
			return fmt.Errorf("reading the database secret %s: %w", opts.DBSecret, err)
		}
		if err := cumulusdb.ApplySecret(poolCfg, []byte(aws.ToString(out.SecretString))); err != nil {
			return fmt.Errorf("database secret %s: %w", opts.DBSecret, err)
		}
	}
	w := &recovery.Writer{Now: f.Now, Region: "us-east-1"}
	if !opts.Offline {
		cfg, err := loadAWS()
		if err != nil {
			return fmt.Errorf("%w (recover reads Step Functions and S3; --offline runs without them)", err)
		}
		w.SFN = awsread.StepFunctions{Client: awsconfig.SFN(cfg, *f.AWS)}
		// `replace` payloads only from the archive's bucket (none for a local one).
		w.Objects = awsread.Objects{Client: awsconfig.S3(cfg, *f.AWS), ReplaceBucket: loc.Bucket}
		if cfg.Region != "" && !f.AWS.EndpointOverridden("SFN") {
			w.Region = cfg.Region
		}
	}

	// The database and the lock come before the plan: a second run is
	// refused before it reads the archive, and no run plans on objects
	// another run is moving.
	pool, err := pgxpool.NewWithConfig(ctx, poolCfg)
	if err != nil {
		return fmt.Errorf("connecting to %s: %w", cumulusdb.Target(poolCfg), err)
	}
	defer pool.Close()
	if err := checkTables(ctx, pool); err != nil {
		return fmt.Errorf("%s: %w", cumulusdb.Target(poolCfg), err)
	}
	var lock *cumulusdb.ArchiveLock
	if !opts.DryRun {
		if lock, err = cumulusdb.LockArchive(ctx, pool, loc.Identity()); err != nil {
			return fmt.Errorf("%s into %s: %w", loc, cumulusdb.Target(poolCfg), err)
		}
		defer lock.Release()
	}

	// The plan: one pass over the selection, keys spooled to a file.
	plan := &recoverPlan{ByDate: map[string]int{}, ByStatus: map[string]int{}, ByColl: map[string]int{},
		Database: cumulusdb.Target(poolCfg), Archive: loc.String(), Area: string(scope.Area)}
	if plan.spool, err = selection.NewSpool(); err != nil {
		return err
	}
	defer plan.spool.Close()
	progress := cmdutil.NewProgress(f.IO.ErrOut, f.IO.ShowProgress())
	_, err = selection.Run(ctx, store, scope, 16, func(r selection.Result) error {
		if err := stopOnAuth(r); err != nil {
			return err
		}
		if r.Unreadable() && !opts.IncludeUnreadable && (scope.Filter.ByContent() || undatable(scope, r.Entry.Key)) {
			plan.LeftAlone++
			return nil
		}
		if r.Unreadable() && (r.Decoded == nil || len(r.Decoded.Layers) == 0) {
			return plan.add(r.Entry.Key, nil)
		}
		progress.Update("planning: %d objects", plan.Objects+1)
		return plan.add(r.Entry.Key, r.Decoded)
	})
	progress.Clear()
	if err != nil {
		return err
	}
	printPlan(f.IO.ErrOut, plan, opts)
	if plan.Objects == 0 {
		fmt.Fprintln(f.IO.ErrOut, "nothing to recover")
		return writeSummary(opts, &RecoverSummary{Type: "summary", DryRun: opts.DryRun, Keep: opts.Keep, Database: plan.Database, SNS: snsNote, LeftAlone: plan.LeftAlone})
	}
	if !opts.DryRun && !opts.Yes {
		ok, err := cmdutil.Confirm(f.IO, fmt.Sprintf("Write %s to %s?", output.Plural(plan.Objects, "object"), plan.Database), "yes")
		if err != nil || !ok {
			fmt.Fprintln(f.IO.ErrOut, "nothing written")
			return err
		}
	}

	db := cumulusdb.New(pool)
	r := &recoverRun{opts: opts, store: store, layout: scope.Layout, db: db, pool: pool, writer: w, plan: plan, lock: lock,
		progress: progress, sum: &RecoverSummary{Type: "summary", DryRun: opts.DryRun, Keep: opts.Keep,
			Database: plan.Database, Selected: plan.Objects, SNS: snsNote, LeftAlone: plan.LeftAlone}}
	return r.run(ctx, scope)
}

// undatable: with a date selection, an object outside the date folders (a
// legacy flat key) that cannot be decoded has no date to select it by.
func undatable(scope selection.Scope, key string) bool {
	return (scope.Filter.From != "" || scope.Filter.To != "") && scope.Layout.ParseKey(key).Date == ""
}

const snsNote = "no SNS notifications were sent (dla recover does not publish them)"

func checkTables(ctx context.Context, pool *pgxpool.Pool) error {
	var missing []string
	for _, t := range cumulusdb.Tables {
		var ok bool
		if err := pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, t).Scan(&ok); err != nil {
			return err
		}
		if !ok {
			missing = append(missing, t)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("the database has no table %s: is it a Cumulus database? (dla never creates tables in one it did not create)", strings.Join(missing, ", "))
	}
	return nil
}

func printPlan(w io.Writer, p *recoverPlan, opts *RecoverOptions) {
	mode := "recover"
	switch {
	case opts.DryRun:
		mode = "dry run (nothing is changed)"
	case opts.Keep:
		mode = "recover, keeping every archive object (--keep)"
	}
	fmt.Fprintf(w, "plan: %s\n  archive   %s (%s)\n  database  %s\n  objects   %d", mode, p.Archive, p.Area, p.Database, p.Objects)
	if p.Unreadable > 0 {
		fmt.Fprintf(w, " (%d unreadable)", p.Unreadable)
	}
	fmt.Fprintln(w)
	if p.LeftAlone > 0 {
		fmt.Fprintf(w, "  left alone: %s of the dates listed (a content filter cannot tell\n"+
			"    whether they match; --include-unreadable moves them to failed-sqs, dla search names them)\n", output.Plural(p.LeftAlone, "unreadable object"))
	}
	for _, g := range []struct {
		name string
		m    map[string]int
	}{{"date", p.ByDate}, {"status", p.ByStatus}, {"collection", p.ByColl}} {
		if len(g.m) == 0 {
			continue
		}
		keys := make([]string, 0, len(g.m))
		for k := range g.m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, 0, len(keys))
		for i, k := range keys {
			if i == 12 {
				parts = append(parts, fmt.Sprintf("... %d more", len(keys)-12))
				break
			}
			// Statuses and collections come from the archive: escaped,
			// as this is for people (stderr), terminal or not.
			parts = append(parts, fmt.Sprintf("%s %d", output.Escape(k), g.m[k]))
		}
		fmt.Fprintf(w, "  by %-9s %s\n", g.name, strings.Join(parts, ", "))
	}
	if opts.Offline {
		fmt.Fprintln(w, "  AWS reads off (--offline): no processing times, failed-step output, CMR dates or file sizes")
	} else {
		fmt.Fprintf(w, "  Step Functions: about %s, %s\n", output.Plural(p.Describe, "DescribeExecution call"), output.Plural(p.History, "execution history"))
	}
}

type recoverRun struct {
	opts     *RecoverOptions
	store    archive.Store
	layout   dla.Layout
	db       *cumulusdb.DB
	pool     *pgxpool.Pool
	writer   *recovery.Writer
	plan     *recoverPlan
	lock     *cumulusdb.ArchiveLock // nil in a dry run
	progress *cmdutil.Progress
	sum      *RecoverSummary

	mu       sync.Mutex
	toDelete []string
	stopErr  error
	out      func(ObjectResult) error
	closeOut func() error
}

type workItem struct {
	key string
	d   *dla.Decoded
	err error // fetch/decode error
}

func (r *recoverRun) run(ctx context.Context, scope selection.Scope) error {
	f := r.opts.Factory
	start := time.Now()
	switch r.opts.Output.Value {
	case "json", "ndjson":
		js := output.NewJSONStream(output.JSONOut(f.IO), r.opts.Output.Value == "ndjson")
		r.out = func(o ObjectResult) error { return js.Write(o) }
		r.closeOut = js.Close
	default:
		w := output.TerminalOut(f.IO) // archive text is escaped on a terminal
		r.out = func(o ObjectResult) error { return printObjectText(w, o) }
		r.closeOut = func() error { return nil }
	}

	// Writes and archive actions run on a context that an interrupt does
	// not cancel: objects in flight finish; nothing new starts.
	workCtx := context.WithoutCancel(ctx)
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	if r.lock != nil {
		go func() {
			select {
			case <-r.lock.Lost():
				r.mu.Lock()
				if r.stopErr == nil {
					r.stopErr = r.lock.Err()
				}
				r.mu.Unlock()
				stop()
			case <-runCtx.Done():
			}
		}()
	}
	scope.Keys = nil
	scope.KeyStream = r.plan.spool.Keys
	scope.Limit = 0

	items := make(chan workItem)
	results := make(chan ObjectResult, r.opts.Select.concurrency)
	var wg sync.WaitGroup
	for range r.opts.Select.concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range items {
				res := r.process(workCtx, it)
				if res.Result == "left" && res.ErrorClass == "Transient" {
					r.mu.Lock()
					if r.stopErr == nil {
						r.stopErr = errors.New(res.Error)
					}
					r.mu.Unlock()
					stop()
				}
				results <- res
			}
		}()
	}
	var outErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		for res := range results {
			r.count(res)
			r.progress.Update("recovering: %d/%d objects, %d written, %d failed", r.sum.Processed, r.plan.Objects, r.sum.Written+r.sum.Dropped, r.sum.Failed)
			if outErr == nil {
				r.progress.Clear()
				if outErr = r.out(res); outErr != nil {
					stop() // stdout is gone: start nothing new, finish what is in flight
				}
			}
		}
	}()
	_, selErr := selection.Run(runCtx, r.store, scope, min(r.opts.Select.concurrency*2, 64), func(sr selection.Result) error {
		select {
		case items <- workItem{key: sr.Entry.Key, d: sr.Decoded, err: sr.Err}:
			return nil
		case <-runCtx.Done():
			return runCtx.Err()
		}
	})
	close(items)
	wg.Wait()
	close(results)
	<-done
	delErr := r.flushDeletes(workCtx)
	r.progress.Clear()
	// Processed leaves out the objects left in place, which were reached:
	// not processed is what was never reached, so the two never overlap.
	r.sum.NotProcessed = r.sum.Selected - r.sum.Processed - r.sum.Left
	r.sum.Seconds = time.Since(start).Seconds()
	if ctx.Err() != nil {
		r.sum.Interrupted = true
	}
	if r.stopErr != nil {
		r.sum.StoppedBy = r.stopErr.Error()
	} else if outErr != nil {
		r.sum.StoppedBy = "stdout was closed; the objects in flight were finished"
	}
	if err := r.closeOut(); err != nil && outErr == nil {
		outErr = err
	}
	if err := writeSummary(r.opts, r.sum); err != nil && outErr == nil {
		outErr = err
	}
	switch {
	case outErr != nil:
		return outErr
	case delErr != nil:
		return delErr
	case ctx.Err() != nil:
		return ctx.Err()
	case r.stopErr != nil:
		return &cmdutil.ExitError{Code: cmdutil.ExitPartial, Err: fmt.Errorf("stopped: %v; %s not processed, left in place: re-run to continue", r.stopErr, output.Plural(r.sum.NotProcessed+r.sum.Left, "object"))}
	case selErr != nil && !errors.Is(selErr, context.Canceled):
		return selErr
	case r.sum.Failed > 0 || r.sum.Unreadable > 0 || r.sum.Left > 0:
		return cmdutil.PartialError
	}
	return nil
}

// process writes one object and acts on the archive.
func (r *recoverRun) process(ctx context.Context, it workItem) ObjectResult {
	o := ObjectResult{Type: "object", Key: it.key, KeyBase64: dla.KeyBase64(it.key), DryRun: r.opts.DryRun}
	if it.err != nil && !dla.IsDecodeError(it.err) {
		// The object could not be fetched: nothing is known of it.
		o.Result, o.Action, o.Error, o.ErrorClass = "left", "left", it.err.Error(), "ReadError"
		return o
	}
	d := it.d
	if it.err != nil && (d == nil || len(d.Layers) == 0) {
		o.Result, o.Error, o.ErrorClass = "unreadable", it.err.Error(), "Unreadable"
		if r.opts.LeaveUnreadable {
			o.Action = "left"
			return o
		}
		r.move(ctx, &o, d)
		return o
	}
	o.ExecutionArn, o.Status = d.ExecutionArn, d.Status
	var werr error
	if it.err != nil {
		werr = &recovery.UnwrapError{Reason: it.err.Error()}
	} else {
		werr = r.write(ctx, d, &o)
	}
	switch {
	case werr == nil:
		o.Result = o.res.Outcome()
		r.remove(ctx, &o)
	case recovery.IsTransient(werr):
		o.Result, o.Action, o.Error, o.ErrorClass = "left", "left", werr.Error(), "Transient"
	default:
		o.Result, o.Error, o.ErrorClass = "failed", werr.Error(), recovery.Class(werr)
		r.move(ctx, &o, d)
	}
	return o
}

func (r *recoverRun) write(ctx context.Context, d *dla.Decoded, o *ObjectResult) error {
	msg, err := recovery.Unwrap(ctx, d, r.writer.SFN, r.writer.Objects)
	if err != nil {
		return err
	}
	o.Source, o.Warnings = msg.Source, msg.Warnings
	w := *r.writer
	var tx interface{ Rollback(context.Context) error }
	if r.opts.DryRun {
		t, err := r.pool.Begin(ctx)
		if err != nil {
			return cumulusdb.Classify(err)
		}
		defer t.Rollback(ctx)
		tx = t
		w.DB = r.db.InTx(t)
	} else {
		w.DB = r.db
	}
	res, err := w.Write(ctx, msg.JSON)
	o.res = res
	if res != nil {
		o.Execution, o.Pdr, o.Granules = res.Execution, res.Pdr, res.Granules
		o.Warnings = append(o.Warnings, res.Warnings...)
		if o.ExecutionArn == "" {
			o.ExecutionArn = res.ExecutionArn
		}
	}
	if tx != nil {
		_ = tx.Rollback(ctx)
	}
	return err
}

// remove deletes a written object (batched), unless --keep or --dry-run.
func (r *recoverRun) remove(ctx context.Context, o *ObjectResult) {
	switch {
	case r.opts.DryRun:
		o.Action = "would delete"
	case r.opts.Keep:
		o.Action = "kept"
	default:
		o.Action = "deleted"
		r.mu.Lock()
		r.toDelete = append(r.toDelete, o.Key)
		full := len(r.toDelete) >= 1000
		r.mu.Unlock()
		if full {
			_ = r.flushDeletes(ctx)
		}
	}
}

// flushDeletes deletes the written objects gathered so far.
func (r *recoverRun) flushDeletes(ctx context.Context) error {
	r.mu.Lock()
	keys := r.toDelete
	r.toDelete = nil
	r.mu.Unlock()
	if len(keys) == 0 {
		return nil
	}
	failed, err := r.store.DeleteMany(ctx, keys)
	if err != nil {
		return fmt.Errorf("deleting %d written objects (they stay in place; a re-run rewrites them harmlessly): %w", len(keys), err)
	}
	r.mu.Lock()
	r.sum.Deleted += len(keys) - len(failed)
	r.mu.Unlock()
	if len(failed) > 0 {
		for k, e := range failed {
			fmt.Fprintf(r.opts.Factory.IO.ErrOut, "dla: written but not deleted %s: %v\n", output.Escape(textKey(k)), output.Escape(e.Error()))
		}
		return fmt.Errorf("%s could not be deleted (a re-run rewrites them harmlessly)", output.Plural(len(failed), "written object"))
	}
	return nil
}

// move copies a failed object to failed-sqs/<date>/<name> (or <name>.1 ...
// when that name is taken by another object), then deletes the original
// only once the copy is confirmed to hold the same bytes.
func (r *recoverRun) move(ctx context.Context, o *ObjectResult, d *dla.Decoded) {
	eventTime := ""
	if d != nil {
		eventTime = d.Time
	}
	dst := r.layout.FailedKey(o.Key, eventTime, r.opts.Factory.Now())
	switch {
	case r.opts.DryRun:
		o.Action, o.MovedTo = "would move", dst
		return
	case r.opts.Keep:
		o.Action = "kept"
		return
	}
	moved, err := archive.Move(ctx, r.store, o.Key, dst)
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
	dst = moved
	o.Action, o.MovedTo = "moved", dst
	r.mu.Lock()
	r.sum.Moved++
	r.mu.Unlock()
}

func (r *recoverRun) count(o ObjectResult) {
	s := r.sum
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
	if o.res != nil && o.res.DescribeCalled && !o.res.ProcessingTimes && (o.Result == recovery.Written || o.Result == recovery.Dropped) {
		s.NoProcTimes++
	}
}

func printObjectText(w io.Writer, o ObjectResult) error {
	line := fmt.Sprintf("%-10s %-12s %s", o.Result, o.Action, textKey(o.Key))
	if o.MovedTo != "" {
		line += " -> " + textKey(o.MovedTo)
	}
	if o.Error != "" {
		line += "\n    " + strings.ReplaceAll(firstLine(o.Error), "\n", " ")
	}
	for _, g := range o.Granules {
		if g.Outcome != recovery.Written {
			line += fmt.Sprintf("\n    granule %s %s", g.GranuleID, g.Outcome)
		}
	}
	for _, wn := range o.Warnings {
		line += "\n    warning: " + wn
	}
	_, err := fmt.Fprintln(w, line)
	return err
}

// textKey is a key as one line of text: quoted when it holds a line break
// or anything else that would not read back as itself.
func textKey(k string) string {
	if lineSafeKey(k) {
		return k
	}
	return strconv.Quote(k)
}

func firstLine(s string) string {
	if len(s) > 400 {
		s = s[:400] + "..."
	}
	return s
}

func writeSummary(opts *RecoverOptions, s *RecoverSummary) error {
	f := opts.Factory
	if opts.Output.Value == "ndjson" || opts.Output.Value == "json" {
		js := output.NewJSONStream(output.JSONOut(f.IO), true)
		if err := js.Write(s); err != nil {
			return err
		}
		if err := js.Close(); err != nil {
			return err
		}
	}
	verb := "recovered"
	if s.DryRun {
		verb = "dry run"
	}
	fmt.Fprintf(f.IO.ErrOut, "%s: %d of %s: %d written, %d dropped, %d failed, %d unreadable, %d left in place, %d not processed\n",
		verb, s.Processed, output.Plural(s.Selected, "object"), s.Written, s.Dropped, s.Failed, s.Unreadable, s.Left, s.NotProcessed)
	fmt.Fprintf(f.IO.ErrOut, "  archive: %d deleted, %d moved to failed-sqs\n", s.Deleted, s.Moved)
	fmt.Fprintf(f.IO.ErrOut, "  database: %s, %s (%d dropped), granules %d written, %d dropped, %d failed, %d marked failed for their files\n",
		output.Plural(s.Executions, "execution"), output.Plural(s.Pdrs, "PDR"), s.PdrsDropped, s.GranulesWritten, s.GranulesDropped, s.GranulesFailed, s.FilesFailed)
	if s.NoProcTimes > 0 {
		fmt.Fprintf(f.IO.ErrOut, "  %s written without processing times (DescribeExecution failed; v21 would have failed them)\n", output.Plural(s.NoProcTimes, "object"))
	}
	fmt.Fprintf(f.IO.ErrOut, "  SNS: %s\n", s.SNS)
	if s.StoppedBy != "" {
		fmt.Fprintf(f.IO.ErrOut, "  stopped: %s\n", output.Escape(s.StoppedBy))
	}
	return nil
}
