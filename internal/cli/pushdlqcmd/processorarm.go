package pushdlqcmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/deadletter/deadletter/internal/cli/cmdutil"
	"github.com/deadletter/deadletter/internal/cli/output"
	"github.com/deadletter/deadletter/internal/lambdactl"
	"github.com/deadletter/deadletter/internal/pushpolicy"
)

// newCmdProcessorArm builds `pushdlq processor arm`.
func newCmdProcessorArm(f *Factory) *cobra.Command {
	opts := &ProcessorOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "arm --function NAME --window START/END --codes LIST",
		Short: "Set the push-dlq window and codes, then enable its event source mapping",
		Long: `Runbook steps 4 and 5: set PROCESS_START_AT, PROCESS_END_AT and
PROCESS_ERROR_CODES on the push-dlq function (every other variable is kept),
wait until Lambda reports the update Successful, then enable the event source
mapping (with --max-concurrency, its maximum concurrency too).

The window and codes are checked as 'pushdlq replay' checks them: codes '*'
with a window over 24 hours is refused unless --allow-wide-window. The plan is
printed first; --dry-run stops there; without a terminal, --yes is required.
If someone changed the function since it was read, nothing is written and the
command says so (exit 1).

` + processorEndpointHelp,
		Example: `  pushdlq processor arm --function my-push-dlq --window 2025-11-14T08:30:00Z/2025-11-14T09:00:00Z --codes 1004 --dry-run
  pushdlq processor arm --function my-push-dlq --window 2025-11-14T08:30:00Z/2025-11-14T09:00:00Z --codes 1004 --max-concurrency 2 --yes`,
		Args: cmdutil.UsageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.Function == "" {
				return cmdutil.UsageErrorf("--function is required")
			}
			if opts.MaxConcurrency != 0 && (opts.MaxConcurrency < 2 || opts.MaxConcurrency > 1000) {
				return cmdutil.UsageErrorf("--max-concurrency must be between 2 and 1000 (Lambda's limits for SQS)")
			}
			policy, err := policyFlags{Window: opts.Window, Codes: opts.Codes, AllowWideWindow: opts.AllowWideWindow}.policy(f)
			if err != nil {
				return err
			}
			if !opts.DryRun {
				if err := cmdutil.RequireYes(f.IO, opts.Yes, "pushdlq processor arm"); err != nil {
					return err
				}
			}
			opts.started = cmdutil.AuditStarted(cmd, nil, opts.Audit, f.Getenv)
			return runProcessorArm(cmd.Context(), opts, policy)
		},
	}
	processorFlags(cmd, opts)
	fl := cmd.Flags()
	fl.StringVar(&opts.Window, "window", "", "inclusive createdAt window START/END (ISO-8601 or epoch ms)")
	fl.StringVar(&opts.Codes, "codes", "", "error codes to replay, comma-separated, or '*' for all")
	fl.IntVar(&opts.MaxConcurrency, "max-concurrency", 0, "set the mapping's maximum concurrency (2-1000)")
	fl.BoolVar(&opts.AllowWideWindow, "allow-wide-window", false, "allow --codes '*' with a window over 24 hours")
	fl.BoolVarP(&opts.Yes, "yes", "y", false, "do not ask for confirmation (required when stdin or stderr is not a terminal)")
	fl.BoolVar(&opts.DryRun, "dry-run", false, "print the plan and change nothing")
	cmdutil.AddAuditFlags(cmd, &opts.Audit, true)
	return cmd
}

// runProcessorArm prints the plan, asks, then sets PROCESS_*, waits for
// the update and enables the mapping, keeping the audit record.
func runProcessorArm(ctx context.Context, opts *ProcessorOptions, policy pushpolicy.Policy) (err error) {
	f := opts.Factory
	lc, fn, m, err := openProcessor(ctx, opts)
	if err != nil {
		return err
	}
	vars := pushpolicy.ProcessVars(policy)
	if err := checkRunnable(fn, vars, &policy); err != nil {
		return err
	}
	w := f.IO.ErrOut
	fmt.Fprintf(w, "pushdlq processor arm: %s (revision %s)\n", output.Escape(fn.ARN), output.Escape(fn.RevisionID))
	printVarChanges(w, fn.Env, vars)
	conc := ""
	if opts.MaxConcurrency > 0 {
		conc = fmt.Sprintf(", maximum concurrency %d", opts.MaxConcurrency)
	}
	fmt.Fprintf(w, "  then enable mapping %s (now %s)%s\n", m.UUID, m.State, conc)
	if ok, err := confirmChange(f, opts, "Arm the processor?"); !ok {
		return err
	}
	rec, err := opts.beginRecord(ctx, fn, "arm")
	if err != nil {
		return err
	}
	defer func() { rec.finish(ctx, f, err) }()
	if err := lambdactl.SetEnv(ctx, lc, fn, pushpolicy.MergeVars(fn.Env, vars)); err != nil {
		return err
	}
	rec.settings(fn.Env, vars)
	progress := cmdutil.NewProgress(w, f.IO.ShowProgress())
	if _, err := lambdactl.Wait(ctx, lc, fn.Name, f.pollInterval(), func(fn lambdactl.Function) {
		progress.Update("waiting for the update of %s: %s", fn.Name, fn.LastUpdateStatus)
	}); err != nil {
		progress.Clear()
		return fmt.Errorf("%w; the mapping was not enabled", err)
	}
	progress.Clear()
	fmt.Fprintf(w, "PROCESS_* set on %s\n", fn.Name)
	var mc *int32
	if opts.MaxConcurrency > 0 {
		n := int32(opts.MaxConcurrency)
		mc = &n
	}
	after, err := lambdactl.SetMapping(ctx, lc, m.UUID, true, mc)
	if err != nil {
		return fmt.Errorf("PROCESS_* were set, but enabling the mapping failed: %w", err)
	}
	rec.mapping(after.UUID, "enabled", mc)
	fmt.Fprintf(w, "mapping %s %s; watch it with: pushdlq processor status --function %s --watch\n", after.UUID, after.State, fn.Name)
	return nil
}
