package dlacmd

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/deadletter/deadletter/internal/cli/cmdutil"
	"github.com/deadletter/deadletter/internal/cli/iostreams"
	"github.com/deadletter/deadletter/internal/gctune"
)

// Main runs dla with the process's arguments and returns its exit code.
func Main() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// A closed stdout (dla ... | head -1) must stop the printing, not kill
	// the process between a write and the delete that follows it: with
	// SIGPIPE ignored, the write fails with EPIPE and the command stops
	// starting new work, finishes what is in flight and exits non-zero.
	signal.Ignore(syscall.SIGPIPE)
	tuneGC(os.Getenv)
	ios := iostreams.System()
	ios.Interrupted = ctx.Done()
	return Run(ctx, NewFactory(ios, os.Getenv), os.Args[1:])
}

// tuneGC collects garbage half as often as Go's default (unless GOGC or
// GOMEMLIMIT says otherwise): dla is a short-lived command whose scans make
// garbage at the speed they read, and at GOGC=100 a year-shaped search
// spent about a sixth of its CPU collecting (0.47 s of CPU, against 0.40 s
// at 200 and 0.39 s at 400; docs/performance.md). 200, not 400: a search
// that decodes every object of 100,000 peaks at 76 MiB (57 at 100, 112 at
// 400), under the 100 MB the archive's size must not change. A soft limit
// of 1 GiB makes the collector work harder as the heap nears it.
func tuneGC(getenv func(string) string) {
	gctune.Tune(getenv, gctune.Settings{GCPercent: 200, MemoryLimit: 1 << 30}) // for the process's life: no undo
}

// Run executes one command line and reports errors on stderr.
func Run(ctx context.Context, f *Factory, args []string) int {
	return cmdutil.Execute(ctx, NewCmdRoot(f), args, f.IO.ErrOut)
}

// NewCmdRoot builds the command tree.
func NewCmdRoot(f *Factory) *cobra.Command {
	root := &cobra.Command{
		Use:   "dla",
		Short: "Search, show, summarise and recover the Cumulus Dead Letter Archive",
		Long: `dla works on the Cumulus Dead Letter Archive: the failed database-write messages
that Cumulus archives in S3 under <stack>/dead-letter-archive/sqs/<YYYY-MM-DD>/.

It decodes every generation of archive object (current DLA records, raw SQS
records, bare Cumulus messages) through any number of body/Body layers, and
reads the archive from S3 (--archive s3://BUCKET/STACK) or from a local copy
(--archive PATH/TO/STACK). Data goes to stdout; progress, warnings and
summaries go to stderr.`,
		Example: `  dla search --archive s3://my-internal-bucket/my-stack --granule MOD09GQ.A2024018.h31v05.006.2024031032640
  dla search --archive testdata/archive/demo --date 2024-03-02 --status FAILED -o keys | dla show --archive testdata/archive/demo -
  dla stats --archive testdata/archive/demo --by error`,
	}
	cmdutil.SetupRoot(root, f.IO.Out, f.IO.ErrOut)
	cmdutil.WrapHelp(root, f.IO.TerminalWidth)
	cmdutil.AddAWSFlags(root, f.AWS)

	root.AddCommand(NewCmdSearch(f), NewCmdShow(f), NewCmdStats(f), NewCmdTriage(f), NewCmdTrace(f), NewCmdReport(f), NewCmdRecover(f), NewCmdMigrateLegacy(f), NewCmdHistory(f), NewCmdAutorecover(f), cmdutil.NewCmdVersion("dla", f.IO.Out), newCmdDev(f))
	root.AddCommand(cmdutil.HelpTopic("exit-codes", "What dla's exit codes mean", cmdutil.ExitCodesHelp))
	root.AddCommand(cmdutil.HelpTopic("environment", "Environment variables dla reads", environmentHelp))
	// Values no shell can list are never completed with file names.
	for _, name := range []string{"collection", "error-class", "granule", "execution", "state-machine", "error", "date", "from", "to", "since"} {
		cmdutil.CompleteFlag(root, name, cmdutil.NoFiles)
	}
	return root
}

const environmentHelp = `Environment variables:

  DLA_ARCHIVE            the archive when --archive is not given
                         (s3://BUCKET/STACK or PATH/TO/STACK)
  DATABASE_URL           recover's database when --database-url and
                         --db-secret are not given
  PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE, PGSSLMODE
                         the database when DATABASE_URL is unset too
  AWS_PROFILE, AWS_REGION, AWS_DEFAULT_REGION
                         AWS profile and region; --profile and --region win
  AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_S3
                         send AWS requests elsewhere (a local S3); --endpoint-url
                         wins. Path-style S3 addressing is used with either.
  AWS_ENDPOINT_URL_ATHENA, AWS_ENDPOINT_URL_SFN, AWS_ENDPOINT_URL_SNS,
  AWS_ENDPOINT_URL_SECRETS_MANAGER
                         one service's endpoint (search --engine athena;
                         recover's Step Functions reads and SNS notices;
                         --db-secret). --endpoint-url covers every service
                         and beats them all
  CUMULUS_API_TOKEN      recover --via-api's token when --token-file is not
                         given (never printed)
  AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN
                         static credentials, as the AWS SDK reads them
  NO_COLOR               any non-empty value turns colour off
  CLICOLOR=0             turns colour off
  CLICOLOR_FORCE         any non-empty value but 0 keeps colour when piped
  DEADLETTER_NO_PROMPT   never ask for confirmation (commands then need --yes)
  DEADLETTER_DEBUG       log AWS requests on stderr (as --debug-aws)
  DEADLETTER_REASON      the reason recover and migrate-legacy keep in their
                         audit record when --reason is not given
  AWS_ENDPOINT_URL_STS   STS's endpoint, for the audit record's caller
                         identity (sts:GetCallerIdentity)
  DEADLETTER_AUDIT_CHUNK_LINES
                         a test knob: items per chunk of an audit record
                         (default 500); no operator needs it`
