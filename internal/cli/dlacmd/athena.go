package dlacmd

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/athenarun"
	"github.com/deadletter/deadletter/internal/athenasql"
	"github.com/deadletter/deadletter/internal/awsconfig"
	"github.com/deadletter/deadletter/internal/cli/cmdutil"
	"github.com/deadletter/deadletter/internal/cli/output"
	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/selection"
)

// athenaDefaultDays is the window an Athena query covers when no date flag
// is given: today and the six days before (UTC). A query never scans the
// whole archive unless --from asks for it.
const athenaDefaultDays = 7

// engineFlags are search's and stats's --engine and the Athena settings.
type engineFlags struct {
	engine                     string
	database, table, workgroup string
	maxScan                    string
	printSQL                   bool
}

func (e *engineFlags) register(cmd *cobra.Command) {
	e.registerEngine(cmd, "where the search runs: local (dla reads every object) or athena (a query over the stack's Glue table)")
	cmd.Flags().BoolVar(&e.printSQL, "print-sql", false, "with --engine athena, print the query and run nothing")
}

// registerEngine is register without --print-sql, for a verb that runs
// more than one query; usage says what --engine chooses.
func (e *engineFlags) registerEngine(cmd *cobra.Command, usage string) {
	f := cmd.Flags()
	f.StringVar(&e.engine, "engine", "local", usage)
	f.StringVar(&e.database, "athena-database", "", "Glue database (default <prefix>_glue_database, <prefix> being the stack with - as _)")
	f.StringVar(&e.table, "athena-table", "", "Glue table (default <prefix>_dla_glue_table)")
	f.StringVar(&e.workgroup, "athena-workgroup", "", "Athena workgroup (default <prefix>_athena_workgroup)")
	f.StringVar(&e.maxScan, "max-scan-bytes", "", "with --engine athena, stop the query once it has scanned this much (bytes, or with KB, MB, GB, TB)")
	_ = cmd.RegisterFlagCompletionFunc("engine", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{"local", "athena"}, cobra.ShellCompDirectiveNoFileComp
	})
}

// athenaPlan is a validated Athena search or count.
type athenaPlan struct {
	names   athenasql.Names
	query   athenasql.Query
	maxScan int64
	loc     archive.Location
	// defaulted says the dates were not given: the default window applies.
	defaulted bool
}

// athena reports whether the Athena engine was chosen, and checks the
// flags that only one engine takes.
func (e *engineFlags) athena() (bool, error) {
	switch e.engine {
	case "local", "": // "": an options struct built without cobra
		for name, set := range map[string]bool{"--print-sql": e.printSQL, "--max-scan-bytes": e.maxScan != "",
			"--athena-database": e.database != "", "--athena-table": e.table != "", "--athena-workgroup": e.workgroup != ""} {
			if set {
				return false, cmdutil.UsageErrorf("%s goes with --engine athena", name)
			}
		}
		return false, nil
	case "athena":
		return true, nil
	}
	return false, cmdutil.UsageErrorf("invalid --engine %q: want local or athena", e.engine)
}

// plan turns the selection into an Athena query.
func (e *engineFlags) plan(f *Factory, s *selectFlags, scope selection.Scope, loc archive.Location) (athenaPlan, error) {
	p := athenaPlan{names: athenasql.NamesFor(loc.Stack), loc: loc}
	if loc.Bucket == "" {
		return p, cmdutil.UsageErrorf("--engine athena needs an archive in S3 (--archive s3://BUCKET/STACK)")
	}
	if s.failed {
		return p, cmdutil.UsageErrorf("--engine athena searches sqs/ only: the Glue table does not cover failed-sqs/ (search it with --engine local)")
	}
	if s.includeLegacy {
		return p, cmdutil.UsageErrorf("--engine athena sees date folders only; legacy objects outside them are not in the Glue table (move them with 'dla migrate-legacy', or search them with --engine local)")
	}
	if err := e.settings(&p); err != nil {
		return p, err
	}
	flt := scope.Filter
	if flt.ErrorClass != nil {
		return p, cmdutil.UsageErrorf("--error-class is computed from the whole error text, which the Glue table does not normalise; use --error with --engine athena, or --engine local")
	}
	q := athenasql.Query{Granules: flt.Granules, Collections: flt.Collections, Executions: flt.Executions,
		Statuses: flt.Statuses, StateMachines: flt.StateMachines, From: flt.From, To: flt.To}
	if flt.Error != nil {
		q.Error = flt.Error.String()
	}
	today := f.Now().UTC()
	if q.To == "" {
		q.To = today.Format(dla.DateLayout)
	}
	if q.From == "" {
		if s.to != "" {
			// --to alone asks for everything up to it: from the first day
			// of the table's partition projection.
			q.From = "2010-01-01"
		} else {
			q.From = today.AddDate(0, 0, 1-athenaDefaultDays).Format(dla.DateLayout)
			p.defaulted = true
		}
	}
	p.query = q
	return p, nil
}

// settings sets the plan's names (the stack's, or the flags') and its
// scan limit.
func (e *engineFlags) settings(p *athenaPlan) error {
	p.names = athenasql.NamesFor(p.loc.Stack)
	p.names.Database = cmp.Or(e.database, p.names.Database)
	p.names.Table = cmp.Or(e.table, p.names.Table)
	p.names.Workgroup = cmp.Or(e.workgroup, p.names.Workgroup)
	if e.maxScan != "" {
		n, err := parseBytes(e.maxScan)
		if err != nil {
			return cmdutil.UsageErrorf("invalid --max-scan-bytes %q: %v", e.maxScan, err)
		}
		p.maxScan = n
	}
	return nil
}

// athenaRunner builds the Athena runner, its progress shown on progress.
func (f *Factory) athenaRunner(ctx context.Context, plan athenaPlan, progress *cmdutil.Progress) (*athenarun.Runner, error) {
	client, err := f.OpenAthena(ctx)
	if err != nil {
		return nil, err
	}
	return &athenarun.Runner{
		Client: client, Workgroup: plan.names.Workgroup, Database: plan.names.Database, MaxScanBytes: plan.maxScan,
		Progress: func(st athenarun.Status) {
			progress.Update("athena: query %s %s, %s scanned, %s", st.ID, st.State, output.HumanBytes(st.Scanned), st.Elapsed.Round(time.Second))
		},
	}, nil
}

// athenaSummary is the line that ends an Athena search or count.
func athenaSummary(plan athenaPlan, st athenarun.Status) string {
	return fmt.Sprintf("Athena query %s in workgroup %s over %s to %s: %s scanned, about $%.4f", st.ID, plan.names.Workgroup,
		plan.query.From, plan.query.To, output.HumanBytes(st.Scanned), st.Cost())
}

// parseBytes reads 1000, 10GB, 1.5TB, 512MiB.
func parseBytes(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   float64
	}{{"KIB", 1 << 10}, {"MIB", 1 << 20}, {"GIB", 1 << 30}, {"TIB", 1 << 40}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1}}
	t := strings.ToUpper(strings.TrimSpace(s))
	mult := 1.0
	for _, u := range units {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v <= 0 || v*mult > 1<<62 {
		return 0, fmt.Errorf("want a positive size such as 10GB")
	}
	return int64(v * mult), nil
}

// defaultOpenAthena is Factory.OpenAthena: a client from the AWS flags.
func defaultOpenAthena(f *Factory) func(ctx context.Context) (athenarun.API, error) {
	return func(ctx context.Context) (athenarun.API, error) {
		cfg, err := awsconfig.Load(ctx, *f.AWS)
		if err != nil {
			return nil, err
		}
		return awsconfig.Athena(cfg, *f.AWS), nil
	}
}

// athenaKeys is a selection.Scope.KeyStream that runs the search query and
// yields the key of every row as its page arrives. Local search then fetches
// and decodes each object and applies the same filter, so what is printed is
// what local search would print for that object.
func athenaKeys(ctx context.Context, r *athenarun.Runner, sql, bucket, sqsPrefix string, last *athenarun.Status) func(yield func(string) error) error {
	return func(yield func(string) error) error {
		st, err := r.Run(ctx, sql, func(row []*string) error {
			if len(row) == 0 || row[0] == nil {
				return fmt.Errorf("Athena returned a row without a path")
			}
			key, err := athenasql.KeyFromPath(bucket, sqsPrefix, *row[0])
			if err != nil {
				return err
			}
			return yield(key)
		})
		*last = st
		return err
	}
}

// printSQL writes the query and nothing else.
func printSQL(f *Factory, plan athenaPlan, sql string) error {
	if plan.defaulted {
		fmt.Fprintf(f.IO.ErrOut, "dla: no date flags: the query covers %s to %s (the last %d days)\n", plan.query.From, plan.query.To, athenaDefaultDays)
	}
	_, err := fmt.Fprintf(f.IO.Out, "-- workgroup %s\n%s;\n", plan.names.Workgroup, sql)
	return err
}

// openSearch validates an Athena search and opens what it reads: the
// archive (each key Athena returns is fetched, decoded and filtered as
// local search does) and a scope whose keys stream from the query. sql is
// "" when --print-sql printed it and nothing is to run.
func (e *engineFlags) openSearch(ctx context.Context, f *Factory, s *selectFlags, progress *cmdutil.Progress, last *athenarun.Status) (selection.Scope, archive.Location, archive.Store, athenaPlan, error) {
	scope, loc, err := s.scope(f)
	if err != nil {
		return scope, loc, nil, athenaPlan{}, err
	}
	plan, err := e.plan(f, s, scope, loc)
	if err != nil {
		return scope, loc, nil, plan, err
	}
	sql, err := athenasql.Search(plan.query, plan.names)
	if err != nil {
		return scope, loc, nil, plan, cmdutil.UsageErrorf("%v", err)
	}
	if e.printSQL {
		return scope, loc, nil, plan, printSQL(f, plan, sql)
	}
	store, err := f.OpenArchive(ctx, loc)
	if err != nil {
		return scope, loc, nil, plan, err
	}
	r, err := f.athenaRunner(ctx, plan, progress)
	if err != nil {
		return scope, loc, nil, plan, err
	}
	if plan.defaulted {
		progress.Clear()
		fmt.Fprintf(f.IO.ErrOut, "dla: no date flags: searching %s to %s (the last %d days) with Athena\n", plan.query.From, plan.query.To, athenaDefaultDays)
	}
	scope.KeyStream = athenaKeys(ctx, r, sql, loc.Bucket, scope.Layout.AreaPrefix(dla.AreaSQS), last)
	return scope, loc, store, plan, nil
}

// runStatsAthena counts with one GROUP BY query: nothing is fetched. Errors
// are grouped by text in the query and folded into classes here.
func runStatsAthena(ctx context.Context, opts *StatsOptions) error {
	f := opts.Factory
	q, err := opts.Engine.groupQuery(ctx, f, &opts.Select, "dla stats", "counting", func(q athenasql.Query, n athenasql.Names) (string, error) {
		return athenasql.Stats(q, n, opts.By)
	})
	if err != nil || q == nil {
		return err
	}
	plan, r, sql, progress := q.plan, q.runner, q.sql, q.progress
	counts := map[string]int{}
	total := 0
	st, err := r.Run(ctx, sql, func(row []*string) error {
		if len(row) != 2 || row[1] == nil {
			return fmt.Errorf("Athena returned a count row of %d columns", len(row))
		}
		n, err := strconv.Atoi(*row[1])
		if err != nil || n < 0 {
			return fmt.Errorf("Athena returned %q as a count", *row[1])
		}
		v := ""
		if row[0] != nil {
			v = *row[0]
		}
		if opts.By == "error" {
			v = dla.ErrorClass(v)
		}
		counts[v] += n
		total += n
		return nil
	})
	progress.Clear()
	if err != nil {
		return err
	}
	report := StatsReport{By: opts.By, Total: total, Scanned: total}
	if err := printStats(f, opts, report, counts, func(groups string) string {
		return fmt.Sprintf("%s in %s (%s)", output.Plural(total, "object"), groups, athenaSummary(plan, st))
	}); err != nil {
		return err
	}
	if opts.Output.Value == "json" { // the table's summary line says it
		fmt.Fprintln(f.IO.ErrOut, athenaSummary(plan, st))
	}
	return nil
}

// groupQuery is an Athena GROUP BY query of stats or triage, ready to run:
// the selection validated (no --limit), the SQL built, the runner made and
// the default date range announced. It is nil, with no error, when
// --print-sql printed the SQL and nothing is to run.
type groupQuery struct {
	plan     athenaPlan
	runner   *athenarun.Runner
	sql      string
	progress *cmdutil.Progress
}

func (e *engineFlags) groupQuery(ctx context.Context, f *Factory, s *selectFlags, command, doing string, build func(athenasql.Query, athenasql.Names) (string, error)) (*groupQuery, error) {
	if s.limit != 0 {
		return nil, cmdutil.UsageErrorf("--limit does not apply to %s", command)
	}
	scope, loc, err := s.scope(f)
	if err != nil {
		return nil, err
	}
	plan, err := e.plan(f, s, scope, loc)
	if err != nil {
		return nil, err
	}
	sql, err := build(plan.query, plan.names)
	if err != nil {
		return nil, cmdutil.UsageErrorf("%v", err)
	}
	if e.printSQL {
		return nil, printSQL(f, plan, sql)
	}
	progress := cmdutil.NewProgress(f.IO.ErrOut, f.IO.ShowProgress())
	r, err := f.athenaRunner(ctx, plan, progress)
	if err != nil {
		return nil, err
	}
	if plan.defaulted {
		fmt.Fprintf(f.IO.ErrOut, "dla: no date flags: %s %s to %s (the last %d days) with Athena\n", doing, plan.query.From, plan.query.To, athenaDefaultDays)
	}
	return &groupQuery{plan: plan, runner: r, sql: sql, progress: progress}, nil
}
