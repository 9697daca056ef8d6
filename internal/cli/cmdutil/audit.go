package cmdutil

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/audit"
	"github.com/deadletter/deadletter/internal/awsconfig"
	"github.com/deadletter/deadletter/internal/buildinfo"
)

// EnvAuditChunkLines is a test knob: how many items an audit chunk holds
// (default audit.DefaultChunkLines), so that the kill tests see chunks
// written while a run goes on. No operator needs it.
const EnvAuditChunkLines = "DEADLETTER_AUDIT_CHUNK_LINES"

// AuditFlags are the flags of a verb that changes something: the reason
// its audit record carries, and --no-audit; Location (pushdlq's --audit)
// where the record goes when the verb has no archive to keep it in.
type AuditFlags struct {
	Reason   string
	NoAudit  bool
	Location string
}

// AddAuditFlags adds --reason and --no-audit, and --audit when location.
func AddAuditFlags(cmd *cobra.Command, a *AuditFlags, location bool) {
	fl := cmd.Flags()
	fl.StringVar(&a.Reason, "reason", "", "why this run is made (a ticket, an incident), kept in its audit record (default $DEADLETTER_REASON)")
	fl.BoolVar(&a.NoAudit, "no-audit", false, "run without an audit record (the plan says so)")
	if location {
		fl.StringVar(&a.Location, "audit", "", "keep the audit record at s3://BUCKET/PREFIX (default $DEADLETTER_AUDIT; else the local state directory, not shared)")
	}
}

// AuditArgv is the invocation as its audit record keeps it: the command's
// path, the flags given and the arguments (secrets are redacted when the
// record is begun).
func AuditArgv(cmd *cobra.Command, args []string) []string {
	words := strings.Fields(cmd.CommandPath())
	words = append(words, GivenFlags(cmd)...)
	return append(words, args...)
}

// AuditStarted is a started record's common part: the tool, its version,
// the verb (the command's path below the root), the argv and the reason.
func AuditStarted(cmd *cobra.Command, args []string, a AuditFlags, getenv func(string) string) audit.Started {
	path := strings.Fields(cmd.CommandPath())
	tool, verb := path[0], strings.Join(path[1:], " ")
	return audit.Started{Tool: tool, Version: buildinfo.String(tool), Verb: verb,
		Argv: AuditArgv(cmd, args), Reason: audit.Reason(a.Reason, getenv)}
}

// AuditEnv is a tool's side of its audit records: its clock, its
// environment (the reason, the OS user, EnvAuditChunkLines) and how a
// recorder's warnings are said.
type AuditEnv struct {
	Now    func() time.Time
	Getenv func(string) string
	Warnf  func(format string, args ...any)
}

// Begin writes a run's started record s to base in store, right before
// the run's first change, with the actor asked now (identity: the AWS
// caller identity; nil when the run uses no AWS credentials). Its error
// (an *audit.UnwritableError when the record cannot be written) refuses
// the run, which has changed nothing.
func (e AuditEnv) Begin(ctx context.Context, store archive.Store, base string, s audit.Started, identity audit.CallerIdentity) (*audit.Recorder, error) {
	s.Actor = audit.WhoAmI(ctx, identity, e.Getenv)
	opts := audit.Options{Now: e.Now, Warnf: e.Warnf}
	if n, err := strconv.Atoi(e.Getenv(EnvAuditChunkLines)); err == nil && n > 0 {
		opts.ChunkLines = n
	}
	return audit.Begin(ctx, store, base, s, opts)
}

// FinishAudit writes rec's finished record: f, with runErr's exit code,
// through a context that outlives an interrupt by 30 seconds. Its error
// is the caller's to say: a record that cannot be finished does not
// change the run's outcome.
func FinishAudit(ctx context.Context, rec *audit.Recorder, f audit.Finished, runErr error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	f.ExitCode = ExitCode(runErr)
	return rec.Finish(ctx, f)
}

// AWSIdentity is the AWS caller identity of a record's actor, asked when
// the record is begun, from the settings s points at then.
// awsconfig.CallerIdentity does not ask AWS while an endpoint points at a
// local server and STS has none of its own.
func AWSIdentity(s *awsconfig.Settings) audit.CallerIdentity {
	return func(ctx context.Context) (string, string, error) {
		cfg, err := awsconfig.Load(ctx, *s)
		if err != nil {
			return "", "", err
		}
		return awsconfig.CallerIdentity(cfg, *s)(ctx)
	}
}
