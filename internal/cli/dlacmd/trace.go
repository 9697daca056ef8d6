package dlacmd

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/athenarun"
	"github.com/deadletter/deadletter/internal/audit"
	"github.com/deadletter/deadletter/internal/cli/cmdutil"
	"github.com/deadletter/deadletter/internal/cli/output"
	"github.com/deadletter/deadletter/internal/cumulusdb"
	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/selection"
	"github.com/deadletter/deadletter/internal/shellword"
	"github.com/deadletter/deadletter/internal/workflow/dbwrite"
	"github.com/deadletter/deadletter/internal/workflow/trace"
)

// TraceOptions are dla trace's inputs.
type TraceOptions struct {
	Factory     *Factory
	Select      selectFlags
	Engine      engineFlags
	PDRs        []string
	DatabaseURL string
	DBSecret    string
	Offline     bool
	Verbose     bool
	Output      *cmdutil.Output
}

// TraceSchema names the JSON form's version (docs/recover.md).
const TraceSchema = "deadletter.dla.trace/v1"

// TraceReport is the -o json form of dla trace.
type TraceReport struct {
	Schema   string `json:"schema"`
	Archive  string `json:"archive"`
	Database string `json:"database"`
	Cumulus  string `json:"cumulus_schema"` // the generation read from the catalog
	// DatabaseError is why the database was not checked (null: it was):
	// the records then hold the archive's messages alone, none judged.
	DatabaseError *string `json:"database_error"`
	Offline       bool    `json:"offline"`
	// Unreadable counts the archive objects that could not be read or
	// decoded: any of them may name a record (0: none).
	Unreadable int           `json:"unreadable"`
	Records    []TraceRecord `json:"records"`
}

// TraceRecord is one record traced, with its next command.
type TraceRecord struct {
	trace.Trace
	// Command is the next command, quoted for bash and zsh (null: none,
	// a PDR that no message names).
	Command *string `json:"command"`
	// CommandNote is what the command needs that it does not carry (null:
	// nothing): the password left out of --database-url, or the flag
	// itself.
	CommandNote *string `json:"command_note"`
	// History is what the archive's audit records say of the record, one
	// run a line, newest first ("recovered by WHO at T (REASON): written,
	// deleted"); absent when none names it.
	History []string `json:"history,omitempty"`
	// TriedByRecover is, for each of its messages in failed-sqs/ that
	// recover runs tried before, how many did.
	TriedByRecover map[string]int `json:"tried_by_recover,omitempty"`
}

// NewCmdTrace builds `dla trace`.
func NewCmdTrace(f *Factory) *cobra.Command {
	opts := &TraceOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "trace --granule ID | --execution ARN | --pdr NAME [flags]",
		Short: "Where did this granule go: its row, every archive message naming it, and what recover would do now",
		Long: `Trace one record (a granule, an execution or a PDR; each flag repeatable):

  the database   its row or rows, read only: status, collection, execution,
                 created_at, updated_at, timestamp, file count; or "not in
                 the database"
  the archive    every message naming it, in sqs/ and failed-sqs/, in
                 the order recover takes them (sqs/ by date folder and
                 key, then failed-sqs/): date, key, workflow status, error
                 class and triage class, and what it would write for this
                 record
  the verdict    for each message, what 'dla recover' would do with it now,
                 after the messages before it: written, dropped as stale
                 (and why), or fails (and why). It is recover's own dry run
                 of all of them, one after another in that order, in one
                 transaction rolled back at the end, against the database
                 as it stands, so trace and recover cannot disagree

and ends with one conclusion line (the state that order leaves the record
in, and the message that decides it), a warning when messages of more than
one collection name the granule, and the exact command to run next, quoted
as triage quotes its commands: the recover --dry-run of every message, in
that order; or the searches of sqs/ and failed-sqs/ that show nothing
failed. A --database-url is carried without its password, which the
command reads from PGPASSWORD or ~/.pgpass (a note says so).

The database is found as recover finds it (--database-url, $DATABASE_URL,
the PG* variables, or --db-secret), with the same schema detection and
checks (Cumulus v21, or v22's partitioned tables): a schema it refuses
stops the trace (exit 2). One it cannot reach does not: the messages are
listed, each "not judged", and the exit is 3. Nothing is written, moved or
deleted. The other selection flags (--date, --from, --to,
--include-legacy, --collection, ...) narrow the archive messages read.
--engine athena finds the sqs/ messages with one query over the Glue table
(failed-sqs/, which the table does not cover, is listed as before).

Exit 0 once traced (whatever the conclusion); 3 when some objects could not
be read (unless --ignore-unreadable).`,
		Example: `  dla trace --archive s3://bucket/stack --granule MOD09GQ.A2024018.h31v05.006.2024031032640 --db-secret stack-db-login
  dla trace --archive testdata/archive/demo --execution 16b323a2-5293-48d2-9a98-1a86d48bf33b --offline -o json`,
		Args: cmdutil.UsageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.Output.Validate(); err != nil {
				return err
			}
			if len(opts.Select.granules)+len(opts.Select.executions)+len(opts.PDRs) == 0 {
				return cmdutil.UsageErrorf("trace what? give --granule ID, --execution ARN or --pdr NAME")
			}
			if err := checkDBFlags(opts.DatabaseURL, opts.DBSecret); err != nil {
				return err
			}
			if opts.Select.failed {
				return cmdutil.UsageErrorf("--failed does not apply to dla trace: it reads sqs/ and failed-sqs/")
			}
			if opts.Select.limit != 0 {
				return cmdutil.UsageErrorf("--limit does not apply to dla trace: every message naming the record is read")
			}
			return runTrace(cmd.Context(), opts)
		},
	}
	opts.Select.register(cmd)
	opts.Engine.register(cmd)
	cmd.Flags().StringArrayVar(&opts.PDRs, "pdr", nil, "PDR name (repeatable)")
	cmd.Flags().StringVar(&opts.DatabaseURL, "database-url", "", "PostgreSQL connection string (default $DATABASE_URL, then the PG* variables; read only, the dry run rolled back)")
	cmd.Flags().StringVar(&opts.DBSecret, "db-secret", "", "Secrets Manager secret (ARN or name) with the database login")
	cmd.Flags().BoolVar(&opts.Offline, "offline", false, "no Step Functions or S3 reads in the dry run (and --offline in the printed command)")
	cmd.Flags().BoolVarP(&opts.Verbose, "verbose", "v", false, "with --ignore-unreadable, list every unreadable object, not only the first 5")
	opts.Output = cmdutil.AddOutputFlag(cmd, "text", "json")
	return cmd
}

func (opts *TraceOptions) targets() []trace.Target {
	var out []trace.Target
	for _, g := range opts.Select.granules {
		out = append(out, trace.Target{Kind: cumulusdb.TraceGranule, ID: g})
	}
	for _, e := range opts.Select.executions {
		out = append(out, trace.Target{Kind: cumulusdb.TraceExecution, ID: e})
	}
	for _, p := range opts.PDRs {
		out = append(out, trace.Target{Kind: cumulusdb.TracePDR, ID: p})
	}
	return out
}

// runTrace is dla trace: every message of sqs/ and failed-sqs/ naming the
// targets, judged by recover's own rolled-back dry run against the
// database's rows, each record's conclusion with its next command.
func runTrace(ctx context.Context, opts *TraceOptions) error {
	f := opts.Factory
	tracer := trace.New(opts.targets())
	progress := cmdutil.NewProgress(f.IO.ErrOut, f.IO.ShowProgress())
	src, err := opts.openSource(ctx, progress)
	if err != nil || src.store == nil {
		return err
	}
	// The database first: one whose schema is refused ends the trace
	// before the archive is read (every object of it, when a PDR is
	// traced). One that cannot be reached never drops the archive's half:
	// its messages are listed, none judged, and the exit is 3.
	path, dbErr, err := opts.openDatabase(ctx, src.loc)
	if err != nil {
		return err
	}
	if path != nil {
		defer path.Close()
	}
	stats, err := opts.scanArchive(ctx, tracer, &src, progress)
	if err != nil {
		return err
	}
	if src.athena {
		fmt.Fprintln(f.IO.ErrOut, athenaSummary(src.plan, src.status))
	}
	traces, err := tracer.Judge(ctx, trace.Sources{Store: src.store, Layout: src.scope.Layout, Path: path, Now: f.Now, Explain: cmdutil.ErrorLine})
	if err != nil {
		return err
	}
	rep := opts.report(ctx, src, path, dbErr, traces, stats)
	if opts.Output.Value == "json" {
		err = output.WriteJSON(output.JSONOut(f.IO), rep)
	} else {
		err = writeTrace(f, rep)
	}
	if err != nil {
		return err
	}
	printTraceSummary(f, rep, len(traces), stats, src.loc)
	if dbErr != nil {
		// The archive's half is printed; the database's is missing.
		return &cmdutil.ExitError{Code: cmdutil.ExitPartial, Err: fmt.Errorf("the database was not checked, so no message was judged: %w", dbErr)}
	}
	return finish(nil, stats, opts.Select.ignoreUnreadable)
}

// traceSource is where a trace reads its messages: the archive, and with
// --engine athena the Glue table's keys.
type traceSource struct {
	scope  selection.Scope
	loc    archive.Location
	store  archive.Store // nil: Athena found nothing to read
	athena bool
	plan   athenaPlan
	status athenarun.Status
}

// openSource opens the archive, and with --engine athena runs the query
// whose keys the trace reads.
func (opts *TraceOptions) openSource(ctx context.Context, progress *cmdutil.Progress) (src traceSource, err error) {
	f := opts.Factory
	if src.athena, err = opts.Engine.athena(); err != nil {
		return src, err
	}
	if !src.athena {
		src.scope, src.loc, src.store, err = opts.Select.open(ctx, f)
		return src, err
	}
	kinds := map[string]bool{}
	for _, t := range opts.targets() {
		kinds[t.Kind] = true
	}
	if kinds[cumulusdb.TracePDR] || len(kinds) > 1 {
		return src, cmdutil.UsageErrorf("--engine athena traces granules or executions, one kind at a time: the Glue table has no PDR name")
	}
	src.scope, src.loc, src.store, src.plan, err = opts.Engine.openSearch(ctx, f, &opts.Select, progress, &src.status)
	return src, err
}

// openDatabase opens the read-only dry-run path. A database that cannot
// be reached is dbErr, not err: the trace goes on without it. A refused
// schema, or AWS reads without a region or credentials, end it.
func (opts *TraceOptions) openDatabase(ctx context.Context, loc archive.Location) (path *dbwrite.Path, dbErr, err error) {
	path, err = openDryRunPath(ctx, opts.Factory, opts.DatabaseURL, opts.DBSecret, opts.Offline, loc)
	switch dbwrite.StageOf(err) {
	case dbwrite.StageDatabase:
		var se *cumulusdb.SchemaError
		if errors.As(err, &se) || ctx.Err() != nil {
			return nil, nil, refuseDatabase(err)
		}
		return nil, err, nil
	case dbwrite.StageReads: // no region, no credentials: as recover says
		return nil, nil, fmt.Errorf("%w (trace's dry run reads Step Functions and S3; --offline runs without them)", err)
	}
	return path, nil, err
}

// scanArchive reads sqs/ and failed-sqs/ for the messages naming the
// targets, narrowing the selection to them.
func (opts *TraceOptions) scanArchive(ctx context.Context, tracer *trace.Tracer, src *traceSource, progress *cmdutil.Progress) (stats selection.Stats, err error) {
	ul := newUnreadableLog(opts.Factory, progress, opts.Select.ignoreUnreadable, opts.Verbose)
	scope := &src.scope
	scope.Filter.Granules, scope.Filter.Executions = nil, nil
	scope.Filter = tracer.Narrow(scope.Filter)
	for _, area := range []dla.Area{dla.AreaSQS, dla.AreaFailed} {
		one := *scope
		one.Area = area
		if area == dla.AreaFailed {
			one.KeyStream = nil // the Glue table covers sqs/ only
		}
		st, err := scan(ctx, src.store, one, opts.Select.concurrency, ul, func(d *dla.Decoded) error {
			if tracer.Add(d, area) {
				progress.Update("%s", output.Plural(stats.Matched+1, "message"))
				stats.Matched++
			}
			return nil
		})
		progress.Clear()
		if err != nil {
			return stats, err
		}
		stats.Listed += st.Listed
		stats.Unreadable += st.Unreadable
	}
	ul.done()
	return stats, nil
}

// report is the trace's report: each record with its next command, its
// history in the audit, and how often recover tried its messages of
// failed-sqs/.
func (opts *TraceOptions) report(ctx context.Context, src traceSource, path *dbwrite.Path, dbErr error, traces []trace.Trace, stats selection.Stats) TraceReport {
	f := opts.Factory
	// The audit, read once: each record's runs, and how often recover
	// tried its messages of failed-sqs/.
	hist := readAuditHistory(ctx, src.store, src.scope.Layout)
	if hist.Problem != "" {
		fmt.Fprintf(f.IO.ErrOut, "dla: %s\n", output.OneLine(hist.Problem))
	}
	c := triageCommand{f: f, sel: &opts.Select, archive: cmp.Or(opts.Select.archiveFlag.value, f.Getenv("DLA_ARCHIVE"))}
	rep := TraceReport{Schema: TraceSchema, Archive: src.loc.String(), Offline: opts.Offline, Unreadable: stats.Unreadable, Records: []TraceRecord{}}
	if path != nil {
		rep.Database, rep.Cumulus = path.Database.Target, string(path.Database.Generation)
	} else {
		rep.Database = databaseTarget(dbURL(f, opts.DatabaseURL), opts.DBSecret)
		why := "not checked: " + output.OneLine(cmdutil.ErrorLine(dbErr))
		rep.DatabaseError = &why
	}
	for _, t := range traces {
		if t.Conclusion.Kind == trace.ConcludeNotInArchive && stats.Unreadable > 0 {
			// "No write of it failed" is said of the objects read only.
			t.Conclusion.Text = strings.Replace(t.Conclusion.Text, "no write of it failed",
				fmt.Sprintf("no write of it failed (but %s could not be read, and may name it)", output.Plural(stats.Unreadable, "object")), 1)
		}
		command, note := opts.command(c, t)
		tr := TraceRecord{Trace: t, Command: command, CommandNote: note, History: hist.Of(traceMatch(t))}
		for _, m := range t.Messages {
			if n := hist.Tries(m.Key); n > 0 && m.Area == string(dla.AreaFailed) {
				if tr.TriedByRecover == nil {
					tr.TriedByRecover = map[string]int{}
				}
				tr.TriedByRecover[m.Key] = n
			}
		}
		rep.Records = append(rep.Records, tr)
	}
	return rep
}

// databaseTarget names the database a trace was given, for a report whose
// database could not be reached: the URL without its password, or the
// secret's name.
func databaseTarget(dburl, secret string) string {
	if secret != "" {
		return "the database of secret " + secret
	}
	if cfg, err := cumulusdb.PoolConfig(dburl, 1); err == nil {
		return cumulusdb.Target(cfg)
	}
	return "the database given"
}

// command is a trace's next command, built as triage builds its own: the
// recover --dry-run of the keys the conclusion names, in the order trace
// ran them (one at a time, so that recover keeps that order), or the
// searches of sqs/ and failed-sqs/ that show no message names the record.
// The note says what the command needs that it does not carry.
func (opts *TraceOptions) command(c triageCommand, t trace.Trace) (*string, *string) {
	var words []string
	var note *string
	if len(t.Conclusion.Keys) > 0 {
		words = c.base("recover")
		if opts.DatabaseURL != "" {
			u, hadPassword, ok := urlWithoutPassword(opts.DatabaseURL)
			switch {
			case !ok:
				n := "add --database-url as given to this trace: it is left out of the command, as its key=value form may hold a password"
				note = &n
			case hadPassword:
				words = append(words, "--database-url", u)
				n := "the password of --database-url is left out: the command reads it from PGPASSWORD or ~/.pgpass"
				note = &n
			default:
				words = append(words, "--database-url", u)
			}
		}
		if opts.DBSecret != "" { // a name, never a password
			words = append(words, "--db-secret", opts.DBSecret)
		}
		if opts.Offline {
			words = append(words, "--offline")
		}
		if len(t.Conclusion.Keys) > 1 {
			words = append(words, "--concurrency", "1")
		}
		words = append(append(words, t.Conclusion.Keys...), "--dry-run")
		cmd := shellword.Join(words...)
		if alone := aloneNote(t); alone != "" {
			if note != nil {
				alone = *note + "; " + alone
			}
			note = &alone
		}
		return &cmd, note
	}
	flag := map[string]string{cumulusdb.TraceGranule: "--granule", cumulusdb.TraceExecution: "--execution"}[t.Kind]
	if flag == "" {
		return nil, nil // no search selects a PDR
	}
	words = append(c.base("search"), flag, t.ID)
	s := opts.Select
	for _, fl := range [][2]string{{"--date", s.date}, {"--from", s.from}, {"--to", s.to}} { // in this order: a map's varies
		if fl[1] != "" {
			words = append(words, fl[0], fl[1])
		}
	}
	if s.includeLegacy {
		words = append(words, "--include-legacy")
	}
	// Trace read sqs/ and failed-sqs/; search reads one of them a run.
	cmd := shellword.Join(words...) + "; " + shellword.Join(append(words, "--failed")...)
	return &cmd, nil
}

// aloneNote says which messages recover's --dry-run reports otherwise
// than the trace ("" when none): it judges each message against the rows
// as they stand, where the run writes each after the ones before it.
func aloneNote(t trace.Trace) string {
	var differ []string
	for _, m := range t.Messages {
		if m.Alone != nil {
			differ = append(differ, fmt.Sprintf("%s %s (after the messages before it: %s)", trimRoot(m.Key), m.Alone.Result, m.Verdict.Result))
		}
	}
	if len(differ) == 0 {
		return ""
	}
	return "recover's --dry-run judges each message against the database as it stands, and reports " + strings.Join(differ, ", ") +
		"; without --dry-run recover writes them one after another, and does what this trace says"
}

// urlWithoutPassword is a postgres:// URL without its password (in the
// user part or a password parameter), and whether it had one; ok is false
// for a connection string that is not a URL (key=value pairs).
func urlWithoutPassword(s string) (string, bool, bool) {
	if !strings.HasPrefix(s, "postgres://") && !strings.HasPrefix(s, "postgresql://") {
		return "", false, false
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", false, false
	}
	had := false
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User, had = url.User(u.User.Username()), true
		}
	}
	if q := u.Query(); q.Has("password") {
		q.Del("password")
		u.RawQuery, had = q.Encode(), true
	}
	return u.String(), had, true
}

// traceMatch matches the audit items of a traced record: those naming it
// (a granule, an execution) and those of its messages' keys (a PDR's too).
func traceMatch(t trace.Trace) func(audit.Item) bool {
	keys := map[string]bool{}
	for _, m := range t.Messages {
		keys[m.Key] = true
	}
	exec := executionMatch(t.ID)
	return func(it audit.Item) bool {
		if keys[it.Key] || (it.MovedTo != "" && keys[it.MovedTo]) {
			return true
		}
		switch t.Kind {
		case cumulusdb.TraceGranule:
			return slices.Contains(it.Granules, t.ID)
		case cumulusdb.TraceExecution:
			return exec(it)
		}
		return false
	}
}
