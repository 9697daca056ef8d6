package cmdutil

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/deadletter/deadletter/internal/audit"
	"github.com/deadletter/deadletter/internal/buildinfo"
)

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
