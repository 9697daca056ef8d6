package dlacmd

import (
	"context"
	"strings"

	"github.com/spf13/cobra"

	"github.com/deadletter/deadletter/internal/audit"
	"github.com/deadletter/deadletter/internal/cli/historycmd"
	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/selection"
)

// HistoryOptions are dla history's inputs.
type HistoryOptions struct {
	Factory   *Factory
	Archive   archiveFlag
	History   historycmd.Options
	Key       string
	Granule   string
	Execution string
}

// NewCmdHistory builds `dla history`.
func NewCmdHistory(f *Factory) *cobra.Command {
	opts := &HistoryOptions{Factory: f}
	help := historycmd.Help{
		Short: "List the runs that changed the archive: who, when, why, what and the outcome",
		Long: `List the runs that changed the archive, newest first, from the audit records
that recover (direct and --via-api) and migrate-legacy keep in the archive
itself, under <stack>/dead-letter-archive/audit/<YYYY-MM-DD>/<run-id>/: when
each run started, who ran it (the AWS caller identity, else the OS user and
host), why (--reason or $DEADLETTER_REASON), what it acted on (the
selection, the database or the Cumulus API) and its outcome (its counts, or
"did not finish" for a run that was killed or is still going, with the
items it recorded).

On a terminal each run is a row fitted to the width; piped, the columns are
tab-separated. -o ndjson prints one run a line (deadletter.history/v1:
run_id, verb, started_at, ended_at (null when it did not finish), finished,
actor, reason, argv, target, counts, exit_code ...).

--key, --granule and --execution list only the runs that touched that
record, each with what it did to it (its items, in -o ndjson). A key
matches an item's key or where the run moved it (failed-sqs/, a staging
folder).`,
		Example: `  dla history --archive s3://my-internal-bucket/my-stack --from yesterday
  dla history --archive s3://my-internal-bucket/my-stack --verb recover --actor alice
  dla history --archive s3://my-internal-bucket/my-stack --key sqs/2024-03-02/ingest-1-abc -o ndjson
  dla history --archive s3://my-internal-bucket/my-stack --granule MOD09GQ.A2024018.h31v05.006.2024031032640`,
	}
	return historycmd.NewCmd(help, &opts.History, opts.Archive.register, opts.records(), func(ctx context.Context) error { return runHistory(ctx, opts) })
}

// records are history's record flags: --key, --granule and --execution.
func (o *HistoryOptions) records() []historycmd.RecordFlag {
	return []historycmd.RecordFlag{
		{Name: "key", Usage: "only runs that touched this archive object (its key, or where a run moved it), with what they did", Value: &o.Key},
		{Name: "granule", Usage: "only runs that touched an object of this granule id, with what they did", Value: &o.Granule},
		{Name: "execution", Usage: "only runs that touched an object of this execution (name or ARN), with what they did", Value: &o.Execution},
	}
}

// runHistory lists the runs recorded in the archive's audit folder.
func runHistory(ctx context.Context, opts *HistoryOptions) error {
	f := opts.Factory
	loc, err := opts.Archive.location(f)
	if err != nil {
		return err
	}
	if err := historycmd.OneRecord(opts.records()); err != nil {
		return err
	}
	layout := dla.Layout{Stack: loc.Stack}
	key := opts.Key
	if key != "" {
		keys, err := selection.ResolveKeys(loc, layout, []string{key})
		if err != nil {
			return keyUsage(err)
		}
		key = keys[0]
	}
	store, err := f.OpenStore(ctx, loc)
	if err != nil {
		return err
	}
	src := historycmd.Source{Store: store, Base: layout.AuditPrefix(), Tool: "dla", Own: true,
		Where: audit.Where(store, layout.AuditPrefix())}
	switch {
	case key != "":
		src.Match = func(it audit.Item) bool { return it.Key == key || it.MovedTo == key }
		src.RecordName = "key " + key
	case opts.Granule != "":
		g := opts.Granule
		src.Match = func(it audit.Item) bool {
			for _, id := range it.Granules {
				if id == g {
					return true
				}
			}
			return false
		}
		src.RecordName = "granule " + g
	case opts.Execution != "":
		src.Match = executionMatch(opts.Execution)
		src.RecordName = "execution " + opts.Execution
	}
	return historycmd.Run(ctx, f.IO, &opts.History, f.Now(), src)
}

// executionMatch matches an item's execution by its ARN or its name (the
// ARN's last part).
func executionMatch(v string) func(audit.Item) bool {
	return func(it audit.Item) bool {
		e := it.Execution
		if e == "" {
			return false
		}
		if e == v {
			return true
		}
		name := e
		if i := strings.LastIndexAny(e, ":/"); i >= 0 {
			name = e[i+1:]
		}
		return name == v
	}
}
