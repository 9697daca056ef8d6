package pushdlqcmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/deadletter/deadletter/internal/audit"
	"github.com/deadletter/deadletter/internal/cli/historycmd"
	"github.com/deadletter/deadletter/internal/cli/output"
)

// HistoryOptions are pushdlq history's inputs.
type HistoryOptions struct {
	Factory      *Factory
	History      historycmd.Options
	Audit        string
	Notification string
	MessageID    string
}

// NewCmdHistory builds `pushdlq history`.
func NewCmdHistory(f *Factory) *cobra.Command {
	opts := &HistoryOptions{Factory: f}
	help := historycmd.Help{
		Short: "List the runs that changed the DLQ or the processor: who, when, why, what and the outcome",
		Long: `List the runs that changed anything, newest first, from the audit records
that replay, export --delete and processor arm|disarm keep: at --audit
s3://BUCKET/PREFIX or $DEADLETTER_AUDIT when set, else in the local state
directory ($XDG_STATE_HOME/deadletter/audit, this machine's runs only). For
each run: when it started, who ran it (the AWS caller identity, else the OS
user and host), why (--reason or $DEADLETTER_REASON), what it acted on (the
DLQ, the window and codes, the function) and its outcome (its counts, or
"did not finish" for a run that was killed or is still going, with the
items it recorded).

On a terminal each run is a row fitted to the width; piped, the columns are
tab-separated. -o ndjson prints one run a line (deadletter.history/v1:
run_id, verb, started_at, ended_at (null when it did not finish), finished,
actor, reason, argv, target, counts, exit_code ...).

--notification and --message-id list only the runs that touched that
notification (the body's notificationId) or that SQS message, each with
what they did to it (its items, in -o ndjson): replayed, parked, released,
held_back, exported and deleted ...`,
		Example: `  pushdlq history --from yesterday
  pushdlq history --audit s3://ops-audit/pushdlq --verb replay --actor alice
  pushdlq history --notification ntf-00001234 -o ndjson
  pushdlq history --message-id 9b6c3f0e-5a7d-4e1b-8f2a-0c1d2e3f4a5b`,
	}
	flags := func(cmd *cobra.Command) {
		cmd.Flags().StringVar(&opts.Audit, "audit", "", "read the audit records at s3://BUCKET/PREFIX (default $DEADLETTER_AUDIT; else the local state directory)")
	}
	return historycmd.NewCmd(help, &opts.History, flags, opts.records(), func(ctx context.Context) error { return runHistory(ctx, opts) })
}

// records are history's record flags: --notification and --message-id.
func (o *HistoryOptions) records() []historycmd.RecordFlag {
	return []historycmd.RecordFlag{
		{Name: "notification", Usage: "only runs that touched this notification (its notificationId), with what they did", Value: &o.Notification},
		{Name: "message-id", Usage: "only runs that touched this SQS message, with what they did", Value: &o.MessageID},
	}
}

// runHistory lists the runs recorded at --audit (or $DEADLETTER_AUDIT, or
// the local state directory).
func runHistory(ctx context.Context, opts *HistoryOptions) error {
	f := opts.Factory
	if err := historycmd.OneRecord(opts.records()); err != nil {
		return err
	}
	if err := opts.History.Output.Validate(); err != nil {
		return err
	}
	place, err := f.auditPlace(ctx, opts.Audit)
	if err != nil {
		return err
	}
	if place.store == nil {
		// No run was ever recorded on this machine (the directory is made
		// by the first): nothing to list, and nothing created.
		fmt.Fprintf(f.IO.ErrOut, "no runs recorded at %s\n", output.Escape(place.where()))
		return nil
	}
	src := historycmd.Source{Store: place.store, Base: place.base, Tool: "pushdlq", Where: place.where()}
	switch {
	case opts.Notification != "":
		n := opts.Notification
		src.Match = func(it audit.Item) bool { return it.NotificationID == n }
		src.RecordName = "notification " + n
	case opts.MessageID != "":
		id := opts.MessageID
		src.Match = func(it audit.Item) bool { return it.MessageID == id }
		src.RecordName = "message " + id
	}
	return historycmd.Run(ctx, f.IO, &opts.History, f.Now(), src)
}
