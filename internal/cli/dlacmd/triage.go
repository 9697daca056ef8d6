package dlacmd

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/athenasql"
	"github.com/deadletter/deadletter/internal/awsconfig"
	"github.com/deadletter/deadletter/internal/cli/cmdutil"
	"github.com/deadletter/deadletter/internal/cli/output"
	"github.com/deadletter/deadletter/internal/cumulusdb"
	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/selection"
	"github.com/deadletter/deadletter/internal/triage"
	"github.com/deadletter/deadletter/internal/workflow/dbwrite"
	"github.com/deadletter/deadletter/internal/workflow/dlarecover"
)

// TriageOptions are dla triage's inputs.
type TriageOptions struct {
	Factory     *Factory
	Select      selectFlags
	Engine      engineFlags
	DatabaseURL string
	DBSecret    string
	Probe       int
	Verbose     bool
	Output      *cmdutil.Output
	// tried counts, per group ("e:"+class, "u:" for the unreadable), the
	// objects of failed-sqs/ recover tried before (the audit records).
	tried map[string]*triedGroup
}

// NewCmdTriage builds `dla triage`.
func NewCmdTriage(f *Factory) *cobra.Command {
	opts := &TriageOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "triage [flags]",
		Short: "Group the archive's failures, say whether a retry will help, and print the command to run",
		Long: `Read the selection once (the same filters as 'dla search'), group the
objects by error class (as 'dla stats --by error'), and give each group a
verdict from the rule table in docs/triage.md:

  transient   retry now, once the cause is gone (a connection, a timeout,
              throttling, the pool exhausted)
  fix-first   a record the messages need is missing (a collection, provider,
              parent execution, async operation or PDR): create it, then retry
  permanent   never as it is (a granule of another collection, a schema
              violation, not a writable Cumulus message, an unreadable object)
  unknown     no rule matches: look at one first

Each group ends with the next command: 'dla recover ... --dry-run' for
what a retry will fix, selecting exactly that group's objects (its
--error-class and its first and last date folder, with this invocation's
archive, selection and AWS flags), or 'dla search ... -o keys' and
'dla show KEY' for what it will not. On a terminal a summary comes first
(objects by class, what to do first), and each group is a header row
fitted to the width, its verdict, and the command whole on a line of its
own, to copy; piped, each group is one tab-separated line.

With a database (--database-url, --db-secret or $DATABASE_URL), the records a
fix-first group needs are looked up (read only): a group whose records all
exist now is "ready". Without one, readiness is not checked, and says so.

Objects that cannot be read or decoded are a group of their own, and each
is named on stderr with the reason; triage then exits 3, as search and
stats do, unless --ignore-unreadable (which names the first 5; -v all).`,
		Example: `  dla triage --archive s3://bucket/stack --from 2024-03-01
  dla triage --archive s3://bucket/stack --db-secret stack-db-login -o json`,
		Args: cmdutil.UsageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.Output.Validate(); err != nil {
				return err
			}
			if err := checkDBFlags(opts.DatabaseURL, opts.DBSecret); err != nil {
				return err
			}
			if opts.Probe < 0 || opts.Probe > 1000 {
				return cmdutil.UsageErrorf("--probe %d: want 0 to 1000 objects per group", opts.Probe)
			}
			if opts.Probe > 0 && dbURL(f, opts.DatabaseURL) == "" && opts.DBSecret == "" {
				return cmdutil.UsageErrorf("--probe needs a database: --database-url, --db-secret or $DATABASE_URL")
			}
			return runTriage(cmd.Context(), opts)
		},
	}
	opts.Select.register(cmd)
	opts.Engine.register(cmd)
	cmd.Flags().StringVar(&opts.DatabaseURL, "database-url", "", "PostgreSQL connection string, to check readiness (default $DATABASE_URL; read only)")
	cmd.Flags().StringVar(&opts.DBSecret, "db-secret", "", "Secrets Manager secret (ARN or name) with the database login, to check readiness")
	cmd.Flags().BoolVarP(&opts.Verbose, "verbose", "v", false, "with --ignore-unreadable, list every unreadable object, not only the first 5")
	cmd.Flags().IntVar(&opts.Probe, "probe", 0, "run recover's dry run (rolled back, --offline) on up to N objects of each group and say how many would be written now; needs a database")
	opts.Output = cmdutil.AddOutputFlag(cmd, "text", "json")
	return cmd
}

// TriageReport is the -o json form of dla triage (docs/triage.md).
type TriageReport struct {
	Schema           string `json:"schema"`
	Archive          string `json:"archive"`
	Scanned          int    `json:"scanned"`
	Total            int    `json:"total"`
	Unreadable       int    `json:"unreadable"`
	ReadinessChecked bool   `json:"readiness_checked"`
	// ReadinessError is why a database given could not be asked (the
	// triage is printed without it, and exits 3); null when it answered
	// or none was given.
	ReadinessError *string       `json:"readiness_error"`
	Groups         []TriageGroup `json:"groups"`
}

// TriageGroup is one group of a triage.
type TriageGroup struct {
	Count   int          `json:"count"`
	Class   triage.Class `json:"class"` // the rule's
	Rule    string       `json:"rule"`
	Verdict string       `json:"verdict"`
	// VerdictClass is the class of the verdict shown: the rule's, unless
	// readiness or the probe says otherwise (VerdictFrom); the command
	// follows it.
	VerdictClass triage.Class    `json:"verdict_class"`
	VerdictFrom  triage.Evidence `json:"verdict_from"`
	Why          string          `json:"why"`
	ErrorClass   *string         `json:"error_class"` // null: unreadable objects
	FirstDate    *string         `json:"first_date"`
	LastDate     *string         `json:"last_date"`
	Collections  []string        `json:"collections"`
	ExampleKey   string          `json:"example_key"`
	Needs        []triage.Need   `json:"needs"`
	Missing      []triage.Need   `json:"missing"` // null: readiness not checked
	Ready        *int            `json:"ready"`   // messages whose records all exist now; null: not checked
	Fix          *string         `json:"fix"`     // what to do before the command, if anything
	Probe        *triage.Probe   `json:"probe"`   // recover's dry run on a sample; null: not probed
	Command      string          `json:"command"` // the next command, quoted for bash and zsh
	// Select lists exactly the group's objects (dla search … -o keys);
	// null for unreadable objects, which no filter selects.
	Select *string `json:"select"`
	// TriedByRecover counts the group's objects of failed-sqs/ that recover
	// runs tried before, by the archive's audit records (absent: none).
	TriedByRecover *triedGroup `json:"tried_by_recover,omitempty"`
	tried          string

	// shortVerdicts are the verdict for a terminal line, naming fewer
	// records each (triage.Group.ShortVerdict).
	shortVerdicts []string
}

// TriageSchema names the JSON form's version.
const TriageSchema = "deadletter.dla.triage/v1"

func runTriage(ctx context.Context, opts *TriageOptions) error {
	f := opts.Factory
	if useAthena, err := opts.Engine.athena(); err != nil || useAthena {
		if err != nil {
			return err
		}
		return runTriageAthena(ctx, opts)
	}
	if opts.Select.limit != 0 {
		return cmdutil.UsageErrorf("--limit does not apply to dla triage: a group is every object of its class")
	}
	scope, loc, store, err := opts.Select.open(ctx, f)
	if err != nil {
		return err
	}
	progress := cmdutil.NewProgress(f.IO.ErrOut, f.IO.ShowProgress())
	t := triage.New()
	t.ProbeSize = opts.Probe
	t.OddKey = func(k string) bool { return !lineSafeKey(k) }
	// Unreadable objects are a group, and named on stderr as search and
	// stats name them: exit 3 means each one was (finish).
	ul := newUnreadableLog(f, progress, opts.Select.ignoreUnreadable, opts.Verbose)
	// What recover already tried of failed-sqs/: the audit, read once.
	var hist *auditHistory
	if scope.Area == dla.AreaFailed {
		hist = readAuditHistory(ctx, store, scope.Layout)
		if hist.Problem != "" {
			fmt.Fprintf(f.IO.ErrOut, "dla: %s\n", output.OneLine(hist.Problem))
		}
		opts.tried = map[string]*triedGroup{}
	}
	countTried := func(group, key string) {
		if n := hist.Tries(key); n > 0 {
			g := opts.tried[group]
			if g == nil {
				g = &triedGroup{}
				opts.tried[group] = g
			}
			g.add(n)
		}
	}
	st, runErr := selection.Run(ctx, store, scope, opts.Select.concurrency, func(r selection.Result) error {
		if r.Unreadable() {
			if err := stopOnAuth(r); err != nil {
				return err
			}
			ul.report(r)
			t.AddUnreadable(r.Entry.Key, scope.Layout.ParseKey(r.Entry.Key).Date)
			countTried("u:", r.Entry.Key)
		} else {
			t.Add(r.Decoded)
			countTried("e:"+dla.ErrorClass(r.Decoded.Error), r.Decoded.Key)
		}
		progress.Update("%s triaged", output.Plural(t.Total, "object"))
		return nil
	})
	progress.Clear()
	if runErr != nil {
		return runErr
	}
	ul.done()
	var dbErr error // the archive pass is printed whatever the database does
	if opts.Probe > 0 {
		if dbErr = probe(ctx, opts, t, store, scope, loc); dbErr != nil {
			if ctx.Err() != nil {
				return dbErr
			}
			for _, g := range t.Groups() { // a probe cut short says nothing
				g.Probe = nil
			}
		}
	}
	if err := finishTriage(ctx, opts, t, loc, st.Listed, st.Unreadable, "", dbErr); err != nil {
		return err
	}
	return finish(nil, st, opts.Select.ignoreUnreadable)
}

// probe runs recover's dry run on each group's sample: every write in a
// transaction rolled back, no Step Functions or S3 reads, nothing moved.
func probe(ctx context.Context, opts *TriageOptions, t *triage.Triage, store archive.Store, scope selection.Scope, loc archive.Location) error {
	f, ctx := opts.Factory, ctx
	path, err := openDryRunPath(ctx, f, opts.DatabaseURL, opts.DBSecret, true, loc)
	if dbwrite.StageOf(err) == dbwrite.StageDatabase {
		return refuseDatabase(err)
	}
	if err != nil {
		return err
	}
	defer path.Close()
	for _, g := range t.Groups() {
		if g.Unreadable || len(g.Sample) == 0 {
			continue
		}
		p := &triage.Probe{Failed: map[string]int{}}
		one := scope
		one.Keys, one.KeyStream, one.Limit = g.Sample, nil, 0
		err := dlarecover.DryRun(ctx, path, store, one, func(o dlarecover.Object) error {
			p.Tried++
			switch o.Result {
			case dlarecover.ResultWritten:
				p.Written++
			case dlarecover.ResultFailed:
				p.Failed[dla.ErrorClass(o.Error)]++
			default:
				p.Failed[string(o.Result)]++
			}
			return nil
		}, dlarecover.DryRunOptions{Now: f.Now, Explain: cmdutil.ErrorLine})
		if err != nil {
			return fmt.Errorf("probing %s: %w", cmp.Or(g.Class, "the objects without an error"), err)
		}
		g.Probe = p
	}
	return nil
}

// finishTriage checks readiness when a database is given and prints the
// triage; source is "" for a pass over the objects, else the Athena query's
// summary. A database that cannot be asked (dbErr: the probe could not
// reach it; or the readiness check fails) never drops the pass: the
// groups are printed with "readiness not checked: ERROR", and the exit is
// 3 (partial).
func finishTriage(ctx context.Context, opts *TriageOptions, t *triage.Triage, loc archive.Location, listed, unreadable int, source string, dbErr error) error {
	f, ctx := opts.Factory, ctx
	checked := false
	if dburl, secret := dbURL(f, opts.DatabaseURL), opts.DBSecret; dbErr == nil && (dburl != "" || secret != "") {
		if dbErr = checkReadiness(ctx, f, t, dburl, secret); dbErr == nil {
			checked = true
		}
	}
	if dbErr != nil && ctx.Err() != nil {
		return dbErr // interrupted: exit 130, not a verdict
	}
	var notChecked string
	if dbErr != nil {
		notChecked = "readiness not checked: "
		if opts.Probe > 0 {
			notChecked = "readiness not checked, nothing probed: "
		}
		notChecked += output.OneLine(cmdutil.ErrorLine(dbErr))
		t.NotCheckedBecause("the database could not be asked")
	}
	archiveArg := cmp.Or(opts.Select.archiveFlag.value, f.Getenv("DLA_ARCHIVE"))
	rep := TriageReport{Schema: TriageSchema, Archive: loc.String(), Scanned: listed, Total: t.Total, Unreadable: unreadable, ReadinessChecked: checked}
	if dbErr != nil {
		rep.ReadinessError = &notChecked
	}
	for _, g := range t.Groups() {
		tg := triageGroup(g, triageCommand{f: f, sel: &opts.Select, archive: archiveArg})
		key := "e:" + g.Class
		if g.Unreadable {
			key = "u:"
		}
		if tr := opts.tried[key]; tr != nil {
			tg.TriedByRecover, tg.tried = tr, tr.text(g.Count)
			for i := range tg.shortVerdicts {
				tg.shortVerdicts[i] += "; " + tg.tried
			}
		}
		rep.Groups = append(rep.Groups, tg)
	}
	if rep.Groups == nil {
		rep.Groups = []TriageGroup{}
	}
	if opts.Output.Value == "json" {
		if source != "" { // what the query scanned and cost
			fmt.Fprintln(f.IO.ErrOut, source)
		}
		if err := output.WriteJSON(output.JSONOut(f.IO), rep); err != nil {
			return err
		}
		if dbErr != nil {
			return &cmdutil.ExitError{Code: cmdutil.ExitPartial, Err: errors.New(notChecked)}
		}
		return nil
	}
	if f.IO.IsStdoutTTY() {
		if err := output.WriteTriage(f.IO, triageView(rep)); err != nil {
			return err
		}
	} else if err := printTriage(f.IO.Out, rep); err != nil {
		return err
	}
	note := "readiness not checked (no database given)"
	switch {
	case checked:
		note = "readiness checked against the database"
	case dbErr != nil:
		note = notChecked
	}
	if source == "" {
		source = fmt.Sprintf("%d read from %s", listed, loc)
		if unreadable > 0 {
			source += fmt.Sprintf(", %d unreadable", unreadable)
		}
	}
	line := fmt.Sprintf("%s in %s, %s; %s", output.Plural(rep.Total, "object"), output.Plural(len(rep.Groups), "group"), source, note)
	if f.IO.IsStderrTTY() { // folded to the terminal's width, as the groups are
		line = output.Wrap(output.OneLine(line), cmp.Or(f.IO.ErrTerminalWidth(), 80), "", "  ")
	}
	fmt.Fprintln(f.IO.ErrOut, line)
	if dbErr != nil { // said above, in the summary: only the code is left
		return cmdutil.PartialError
	}
	return nil
}

// runTriageAthena groups in one query (by error text, collection, provider
// and date) and classifies here: nothing is fetched. What only the
// messages hold (an UnmetRequirementsError's async operation and parent
// execution) is not in the Glue table; its collection is.
func runTriageAthena(ctx context.Context, opts *TriageOptions) error {
	f := opts.Factory
	q, err := opts.Engine.groupQuery(ctx, f, &opts.Select, "dla triage", "triaging", athenasql.Triage)
	if err != nil || q == nil {
		return err
	}
	plan, r, sql, progress := q.plan, q.runner, q.sql, q.progress
	loc, layout := plan.loc, dla.Layout{Stack: plan.loc.Stack}
	t := triage.New()
	st, err := r.Run(ctx, sql, func(row []*string) error {
		tr, err := athenasql.ParseTriageRow(row)
		if err != nil {
			return err
		}
		key, err := athenasql.KeyFromPath(loc.Bucket, layout.AreaPrefix(dla.AreaSQS), tr.Path)
		if err != nil {
			return err
		}
		t.AddCounted(triage.Counted{Key: key, Date: tr.Date, Error: tr.Error, Collection: tr.Collection, Provider: tr.Provider, N: tr.N})
		return nil
	})
	progress.Clear()
	if err != nil {
		return err
	}
	return finishTriage(ctx, opts, t, loc, t.Total, 0, athenaSummary(plan, st), nil)
}

// checkReadiness opens the database read only and looks up what the
// fix-first groups need.
func checkReadiness(ctx context.Context, f *Factory, t *triage.Triage, dburl, secret string) error {
	cfg, err := cumulusdb.Configure(ctx, dburl, secret, 2, func(ctx context.Context, id string) ([]byte, error) {
		awsCfg, err := awsconfig.Load(ctx, *f.AWS)
		if err != nil {
			return nil, err
		}
		return awsconfig.SecretText(ctx, awsconfig.SecretsManager(awsCfg, *f.AWS), id)
	})
	if err != nil {
		return err
	}
	cfg.ConnConfig.RuntimeParams["default_transaction_read_only"] = "on"
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("connecting to %s: %w", cumulusdb.Target(cfg), err)
	}
	defer pool.Close()
	return t.CheckReadiness(ctx, func(ctx context.Context, n triage.Need) (bool, error) {
		if n.Kind == triage.KindGranule && n.CollectionCumulusID != "" {
			return cumulusdb.GranuleInCollection(ctx, pool, n.Name, n.CollectionCumulusID)
		}
		return cumulusdb.Exists(ctx, pool, n.Kind, n.Name)
	})
}
