package pushdlqcmd

import (
	"context"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/deadletter/deadletter/internal/cli/cmdutil"
	"github.com/deadletter/deadletter/internal/cli/iostreams"
	"github.com/deadletter/deadletter/internal/pushpolicy"
)

// Main runs pushdlq with the process's arguments and returns its exit code.
func Main() int {
	// A write to a closed stdout (`pushdlq replay -o ndjson | head -1`)
	// must return EPIPE, not kill the process with SIGPIPE: the run still
	// has to release the messages it holds and complete its journal.
	signal.Ignore(syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ios := iostreams.System()
	ios.Interrupted = ctx.Done()
	return Run(ctx, NewFactory(ios, os.Getenv), os.Args[1:])
}

// Run executes one command line and reports errors on stderr.
func Run(ctx context.Context, f *Factory, args []string) int {
	return cmdutil.Execute(ctx, NewCmdRoot(f), args, f.IO.ErrOut)
}

// NewCmdRoot builds the command tree.
func NewCmdRoot(f *Factory) *cobra.Command {
	root := &cobra.Command{
		Use:   "pushdlq",
		Short: "Inspect, export and replay the push-notification dead-letter queue",
		Long: `pushdlq works on the push-notification SQS dead-letter queue: the
FailedPushCommand messages (the original PushCommand plus errorCode and
errorMessage) that the push Lambda leaves there after a second failure.

It inspects the queue without consuming it, exports it to NDJSON, and replays
a time-boxed, error-code-filtered slice of it to the priority queues
${base}P${priority}, with the same eligibility rules as the push-dlq
processor. Nothing is deleted from the DLQ before it is safely in its target
queue or on disk. Data goes to stdout; plans, progress and warnings to stderr.`,
		Example: `  pushdlq inspect --dlq push-dlq
  pushdlq replay --dlq push-dlq --queue-base-url https://sqs.us-east-1.amazonaws.com/123456789012/push- \
      --window 2025-11-14T08:30:00Z/2025-11-14T09:00:00Z --codes 1004 --dry-run
  pushdlq export --dlq push-dlq --out push-dlq-2025-11-14.ndjson`,
	}
	cmdutil.SetupRoot(root, f.IO.Out, f.IO.ErrOut)
	cmdutil.WrapHelp(root, f.IO.TerminalWidth)
	cmdutil.AddAWSFlags(root, f.AWS)
	root.PersistentFlags().Lookup("endpoint-url").Usage = "send SQS requests to this URL, e.g. a local SQS such as fauxqs or ElasticMQ (beats AWS_ENDPOINT_URL_SQS and AWS_ENDPOINT_URL)"
	root.AddCommand(NewCmdCodes(f), NewCmdInspect(f), NewCmdTriage(f), NewCmdTrace(f), NewCmdExport(f), NewCmdReplay(f), NewCmdHistory(f), NewCmdProcessor(f),
		cmdutil.NewCmdVersion("pushdlq", f.IO.Out), newCmdDev(f))
	root.AddCommand(cmdutil.HelpTopic("exit-codes", "What pushdlq's exit codes mean", exitCodesHelp))
	root.AddCommand(cmdutil.HelpTopic("environment", "Environment variables pushdlq reads", environmentHelp))
	cmdutil.CompleteFlag(root, "codes", completeCodes)
	cmdutil.CompleteFlag(root, "window", cmdutil.NoFiles)
	cmdutil.CompleteFlag(root, "since", cmdutil.NoFiles)
	return root
}

// completeCodes completes --codes from the code table, each with its
// name: after "1004," the codes not yet in the list, then "*" (all codes)
// when nothing is typed yet. Never file names.
func completeCodes(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	done, _ := cutLast(toComplete, ",")
	var out []string
	if done == "" {
		out = append(out, "*\tevery code (a window over 24 hours needs --allow-wide-window)")
	}
	listed := map[string]bool{}
	for _, c := range strings.Split(done, ",") {
		listed[strings.TrimSpace(c)] = true
	}
	prefix := ""
	if done != "" {
		prefix = done + ","
	}
	for _, c := range pushpolicy.Codes {
		if code := strconv.Itoa(c.Code); !listed[code] {
			out = append(out, prefix+code+"\t"+c.Name)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// cutLast splits s around the last sep: "1004,20" is "1004" and "20".
func cutLast(s, sep string) (before, after string) {
	if i := strings.LastIndex(s, sep); i >= 0 {
		return s[:i], s[i+len(sep):]
	}
	return "", s
}

const environmentHelp = `Environment variables:

  PUSH_DLQ_QUEUE_URL     the DLQ
  PUSH_QUEUE_BASE_URL    the priority queues' prefix
  PROCESS_START_AT       window start (ISO-8601)
  PROCESS_END_AT         window end (ISO-8601)
  PROCESS_ERROR_CODES    1004,2003 or *
                         (these five are read by 'replay --from-env',
                         exactly as the push-dlq processor reads them)
  AWS_PROFILE, AWS_REGION, AWS_DEFAULT_REGION
                         AWS profile and region; --profile and --region win
  AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_SQS
                         send AWS requests elsewhere (a local SQS);
                         --endpoint-url wins
  AWS_ENDPOINT_URL_LAMBDA
                         the Lambda API of pushdlq processor (--endpoint-url
                         is for SQS only: with it set, processor refuses to
                         run unless this, AWS_ENDPOINT_URL or the profile
                         gives Lambda an endpoint)
  AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN
                         static credentials, as the AWS SDK reads them
  XDG_STATE_HOME         journals go to $XDG_STATE_HOME/deadletter
                         (default ~/.local/state/deadletter), and the
                         audit records to its audit/ without --audit
  DEADLETTER_AUDIT       where the audit records are: s3://BUCKET/PREFIX
                         (--audit wins); S3 follows AWS_ENDPOINT_URL_S3,
                         never --endpoint-url
  DEADLETTER_REASON      the reason an audit record keeps (--reason wins)
  NO_COLOR               any non-empty value turns colour off
  CLICOLOR=0             turns colour off
  CLICOLOR_FORCE         any non-empty value but 0 keeps colour when piped
  DEADLETTER_NO_PROMPT   never ask for confirmation (replay then needs --yes)
  DEADLETTER_DEBUG       log AWS requests on stderr (as --debug-aws)`

const exitCodesHelp = `Exit codes:

  0    success: everything selected was moved (or, for a dry run, could be);
       a DLQ with nothing to replay is a success too, unless messages are
       in flight (then 3: another consumer or an interrupted run holds them);
       inspect, triage, trace and codes end so, quietly, when stdout is
       closed (pushdlq inspect … | head -1)
  1    failure: the command could not do its job (a queue could not be read,
       the journal could not be written, stdout was closed before the end
       of a replay or an export, a resume would have to wait longer than
       --wait-held); or a confirmation was answered with anything but
       "yes" ("not confirmed (type yes)": nothing was done)
  2    usage: a bad flag, argument or combination of them; nothing was read
  3    partial: the command ran, but some messages were not moved: a target
       refused them (failed), a send got no reply (uncertain: possibly
       duplicated), a delete or release failed, messages were in flight
       elsewhere, or a dry run found a target queue missing. The summary
       counts them, stderr says why per target queue, the journal lists
       each message
  4    AWS credentials or permissions: no credentials, expired credentials,
       or access denied
  130  interrupted (Ctrl-C or SIGTERM): batches in flight were finished and
       journalled, everything else released; replay prints the command that
       resumes the run (or that nothing changed), export the one that
       finishes it

Whatever the exit code, no message is deleted from the DLQ before its
target queue (or the export file) has it, and every message still held is
made visible again before exit.`
