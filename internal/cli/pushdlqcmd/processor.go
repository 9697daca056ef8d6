package pushdlqcmd

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/deadletter/deadletter/internal/audit"
	"github.com/deadletter/deadletter/internal/cli/cmdutil"
	"github.com/deadletter/deadletter/internal/lambdactl"
	"github.com/deadletter/deadletter/internal/pushpolicy"
)

// ProcessorOptions are the inputs of pushdlq processor status|arm|disarm.
type ProcessorOptions struct {
	Factory         *Factory
	Function        string
	Mapping         string // the mapping's UUID, when the function has several
	Window, Codes   string
	MaxConcurrency  int
	AllowWideWindow bool
	Clear           bool
	Yes, DryRun     bool
	Watch           bool
	Interval        time.Duration
	Output          *cmdutil.Output
	// Audit: --reason, --no-audit, --audit of arm and disarm; started is
	// their record's common part.
	Audit   cmdutil.AuditFlags
	started audit.Started
}

// processorEndpointHelp is what every processor verb's help says of
// --endpoint-url (issue 38: the flag sent the queue reads to a local SQS and
// the Lambda calls to AWS, and the error then said to check the flag).
const processorEndpointHelp = `--endpoint-url covers SQS only (the queue depths). The Lambda calls go where
AWS_ENDPOINT_URL_LAMBDA, AWS_ENDPOINT_URL or the profile sends them; with
--endpoint-url set and none of those, the verb refuses before any request
rather than call AWS's Lambda beside a local SQS.`

// NewCmdProcessor builds `pushdlq processor` and its three verbs.
func NewCmdProcessor(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "processor",
		Short: "Show, arm and disarm the push-dlq Lambda (the runbook's steps 4, 5, 6 and 8)",
		Long: `Drive the push-dlq processor as the runbook does by hand:

  status   its PROCESS_* window and codes, its event source mapping, and the
           depths of the DLQ and the priority queues (--watch: every few
           seconds until Ctrl-C; runbook step 6)
  arm      set PROCESS_START_AT, PROCESS_END_AT and PROCESS_ERROR_CODES
           (step 4), wait for the update to take effect, then enable the
           mapping (step 5)
  disarm   disable the mapping (step 8); --clear also sets a window that
           matches nothing

Only the PROCESS_* variables are changed: the environment is read, merged
and written back on the condition that nobody changed the function in
between (its RevisionId), so a concurrent change is never overwritten.
arm and disarm print their plan first and need --yes when they cannot ask.

` + processorEndpointHelp,
		Args: cmdutil.UsageArgs(cobra.NoArgs),
	}
	cmd.AddCommand(newCmdProcessorStatus(f), newCmdProcessorArm(f), newCmdProcessorDisarm(f))
	return cmd
}

// processorFlags registers --function and --mapping, which every processor
// verb takes.
func processorFlags(cmd *cobra.Command, opts *ProcessorOptions) {
	cmd.Flags().StringVar(&opts.Function, "function", "", "the push-dlq function: name or ARN (required)")
	cmd.Flags().StringVar(&opts.Mapping, "mapping", "", "the event source mapping's UUID, when the function has more than one")
}

// pickMapping is the one mapping to change: the only one, or --mapping.
func pickMapping(maps []lambdactl.Mapping, uuid, function string) (lambdactl.Mapping, error) {
	if uuid != "" {
		for _, m := range maps {
			if m.UUID == uuid {
				return m, nil
			}
		}
		return lambdactl.Mapping{}, fmt.Errorf("function %s has no event source mapping %s", function, uuid)
	}
	switch len(maps) {
	case 0:
		return lambdactl.Mapping{}, fmt.Errorf("function %s has no event source mapping: create one from the DLQ first (the runbook assumes it exists, disabled)", function)
	case 1:
		return maps[0], nil
	}
	ids := make([]string, len(maps))
	for i, m := range maps {
		ids[i] = m.UUID
	}
	return lambdactl.Mapping{}, cmdutil.UsageErrorf("function %s has %d event source mappings (%s): choose one with --mapping", function, len(maps), strings.Join(ids, ", "))
}

// openProcessor reads the function and picks the mapping arm and disarm
// change.
func openProcessor(ctx context.Context, opts *ProcessorOptions) (lambdactl.API, lambdactl.Function, lambdactl.Mapping, error) {
	lc, err := opts.Factory.Lambda(ctx)
	if err != nil {
		return nil, lambdactl.Function{}, lambdactl.Mapping{}, err
	}
	fn, err := lambdactl.Get(ctx, lc, opts.Function)
	if err != nil {
		return nil, fn, lambdactl.Mapping{}, err
	}
	maps, err := lambdactl.Mappings(ctx, lc, fn.Name)
	if err != nil {
		return nil, fn, lambdactl.Mapping{}, err
	}
	m, err := pickMapping(maps, opts.Mapping, fn.Name)
	return lc, fn, m, err
}

// confirmChange ends a dry run, or asks unless --yes; false: stop.
func confirmChange(f *Factory, opts *ProcessorOptions, question string) (bool, error) {
	if opts.DryRun {
		fmt.Fprintln(f.IO.ErrOut, "dry run: nothing changed")
		return false, nil
	}
	if opts.Yes {
		return true, nil
	}
	ok, err := cmdutil.Confirm(f.IO, question, "yes")
	if err != nil {
		return false, err
	}
	if !ok {
		fmt.Fprintln(f.IO.ErrOut, "nothing changed")
		return false, cmdutil.ErrNotConfirmed
	}
	return true, nil
}

// checkRunnable reads the environment the function would have after the
// change as the processor reads it (pushpolicy.LoadConfig): it must load, and
// give back the policy meant. Nothing is written otherwise.
func checkRunnable(fn lambdactl.Function, vars map[string]string, want *pushpolicy.Policy) error {
	merged := pushpolicy.MergeVars(fn.Env, vars)
	cfg, err := pushpolicy.LoadConfig(func(k string) string { return merged[k] })
	if err != nil {
		return fmt.Errorf("with these settings %s would not start (%v); nothing was changed", fn.Name, err)
	}
	if cfg.Policy.Start != want.Start || cfg.Policy.End != want.End || cfg.Policy.CodesString() != want.CodesString() {
		return cmdutil.UsageErrorf("the window cannot be written as the processor reads it (%s=%s, %s=%s); nothing was changed",
			pushpolicy.EnvStartAt, vars[pushpolicy.EnvStartAt], pushpolicy.EnvEndAt, vars[pushpolicy.EnvEndAt])
	}
	return nil
}
