package dlacmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/audit"
	"github.com/deadletter/deadletter/internal/cli/cmdutil"
	"github.com/deadletter/deadletter/internal/cli/output"
	"github.com/deadletter/deadletter/internal/dla"
)

// dlaAudit is one dla run's audit record, kept in the archive itself
// (<stack>/dead-letter-archive/audit/<date>/<run-id>/) through the run's
// contained store: made when the verb starts (its common part), given
// its target and plan before the plan is printed (so that the plan names
// its folder), begun right before the first change, given each item as
// its outcome is known, and finished at the end, Ctrl-C too.
type dlaAudit struct {
	f       *Factory
	flags   cmdutil.AuditFlags
	started audit.Started
	store   archive.Store
	base    string
	rec     *audit.Recorder
}

// newDLAAudit is the record's common part, from the command as given.
func newDLAAudit(cmd *cobra.Command, args []string, flags cmdutil.AuditFlags, f *Factory) *dlaAudit {
	return &dlaAudit{f: f, flags: flags, started: cmdutil.AuditStarted(cmd, args, flags, f.Getenv)}
}

// prepare names where the record goes (the archive's audit folder) and
// what the run acts on; the run id and start are fixed here, so that the
// plan can name the folder.
func (a *dlaAudit) prepare(store archive.Store, layout dla.Layout, target audit.Target, sel map[string]any, plan map[string]int) {
	if a == nil {
		return
	}
	now := a.f.Now().UTC()
	a.store, a.base = store, layout.AuditPrefix()
	a.started.StartedAt = now
	a.started.RunID = audit.NewRunID(now)
	a.started.Target, a.started.Selection, a.started.Plan = target, sel, plan
}

// where is the record's folder for people.
func (a *dlaAudit) where() string {
	return audit.Where(a.store, audit.RunFolder(a.base, a.started.StartedAt, a.started.RunID))
}

// planLine is the plan's line that names the record: its folder, or that
// there is none.
func (a *dlaAudit) planLine(w io.Writer) {
	if a == nil {
		return
	}
	if a.flags.NoAudit {
		fmt.Fprintln(w, "audit: none (--no-audit)")
		return
	}
	fmt.Fprintf(w, "audit: %s\n", output.Escape(a.where()))
}

// begin writes the started record, right before the first change; an
// error refuses the run with nothing changed (one line, exit 1). identity
// is the AWS caller identity (nil: the run uses no AWS credentials).
func (a *dlaAudit) begin(ctx context.Context, identity audit.CallerIdentity) error {
	if a == nil || a.flags.NoAudit {
		return nil
	}
	env := cmdutil.AuditEnv{Now: a.f.Now, Getenv: a.f.Getenv, Warnf: func(format string, args ...any) {
		fmt.Fprintf(a.f.IO.ErrOut, "dla: %s\n", output.Escape(fmt.Sprintf(format, args...)))
	}}
	rec, err := env.Begin(ctx, a.store, a.base, a.started, identity)
	var ue *audit.UnwritableError
	if errors.As(err, &ue) {
		// One line that says it is the record, why (a denied put says
		// which permission, as every AWS error does), and that nothing
		// changed; the exit code is the cause's (4 for a permission).
		return &cmdutil.ExitError{Code: max(cmdutil.ExitCode(ue.Err), cmdutil.ExitFailure), Err: fmt.Errorf(
			"the audit record cannot be written to %s: %s; nothing was changed (--no-audit runs without a record)",
			ue.Where, output.OneLine(cmdutil.ErrorLine(ue.Err)))}
	}
	if err != nil {
		return err
	}
	a.rec = rec
	return nil
}

// add records one item's outcome.
func (a *dlaAudit) add(it audit.Item) {
	if a == nil || a.rec == nil {
		return
	}
	it.Error = recordError(it.Error)
	a.rec.Add(it)
}

// finish writes the finished record: counts, the exit code of runErr,
// and whether an interrupt stopped the run. A record that cannot be
// finished is said on stderr; it does not change the run's outcome.
func (a *dlaAudit) finish(ctx context.Context, counts map[string]int, runErr error, interrupted bool) {
	if a == nil || a.rec == nil {
		return
	}
	f := audit.Finished{Counts: counts, Interrupted: interrupted}
	if runErr != nil {
		f.Error = recordError(runErr.Error())
	}
	if err := cmdutil.FinishAudit(ctx, a.rec, f, runErr); err != nil {
		fmt.Fprintf(a.f.IO.ErrOut, "dla: %s\n", output.Escape(err.Error()))
	}
	a.rec = nil
}

// recordError is an error text as a record keeps it: its secrets
// redacted, on one line, cut short.
func recordError(s string) string { return shortError(output.OneLine(audit.RedactText(s))) }

// shortError is an error text cut to about 300 bytes, at a character's
// start. It is cut after its secrets are redacted: a cut through a URL
// would leave its password without the @ that marks it.
func shortError(s string) string {
	if len(s) <= 300 {
		return s
	}
	n := 300
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}

// callerIdentity is the AWS caller identity of a run that uses AWS
// credentials (nil when it uses none: a local archive read offline).
func (f *Factory) callerIdentity(usesAWS bool) audit.CallerIdentity {
	if !usesAWS {
		return nil
	}
	return cmdutil.AWSIdentity(f.AWS)
}

// auditDatabase is the database a connection string names, for the
// record: host, port and name, never the user's password. A string that
// does not parse (or names none) gives what it can; with a secret, the
// host and name are the secret's, read when the run opened the database
// (resolved, set by the caller).
func auditDatabase(connString string) *audit.Database {
	cfg, err := pgxpool.ParseConfig(connString)
	if err != nil {
		return &audit.Database{}
	}
	return poolDatabase(cfg)
}

func poolDatabase(cfg *pgxpool.Config) *audit.Database {
	cc := cfg.ConnConfig
	d := &audit.Database{Host: cc.Host, Name: cc.Database}
	if cc.Port != 0 {
		d.Port = strconv.Itoa(int(cc.Port))
	}
	return d
}

// selectionOf is the selection flags given, for the record.
func selectionOf(s *selectFlags, keys int) map[string]any {
	sel := map[string]any{}
	for name, v := range map[string][]string{"granule": s.granules, "collection": s.collections, "execution": s.executions,
		"status": s.statuses, "state_machine": s.stateMachines} {
		if len(v) > 0 {
			sel[name] = v
		}
	}
	for name, v := range map[string]string{"error": s.errorRE, "date": s.date, "from": s.from, "to": s.to, "since": s.since} {
		if v != "" {
			sel[name] = v
		}
	}
	if s.sinceWindow != nil {
		sel["since"] = s.since
	}
	if s.errorClass.set {
		sel["error_class"] = s.errorClass.v
	}
	if s.failed {
		sel["failed"] = true
	}
	if s.includeLegacy {
		sel["include_legacy"] = true
	}
	if s.limit > 0 {
		sel["limit"] = s.limit
	}
	if keys > 0 {
		sel["keys"] = keys
	}
	return sel
}
