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

// newCmdProcessorDisarm builds `pushdlq processor disarm`.
func newCmdProcessorDisarm(f *Factory) *cobra.Command {
	opts := &ProcessorOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "disarm --function NAME",
		Short: "Disable the push-dlq event source mapping (and with --clear, its window)",
		Long: `Runbook step 8: disable the push-dlq function's event source mapping, so that
nothing more is replayed. With --clear, the PROCESS_* variables are then set to
a window that matches nothing (one millisecond at the epoch, code 0), so that
enabling the mapping by mistake later replays nothing.

` + processorEndpointHelp,
		Example: `  pushdlq processor disarm --function my-push-dlq --yes
  pushdlq processor disarm --function my-push-dlq --clear --yes`,
		Args: cmdutil.UsageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.Function == "" {
				return cmdutil.UsageErrorf("--function is required")
			}
			if !opts.DryRun {
				if err := cmdutil.RequireYes(f.IO, opts.Yes, "pushdlq processor disarm"); err != nil {
					return err
				}
			}
			opts.started = cmdutil.AuditStarted(cmd, nil, opts.Audit, f.Getenv)
			return runProcessorDisarm(cmd.Context(), opts)
		},
	}
	processorFlags(cmd, opts)
	cmd.Flags().BoolVar(&opts.Clear, "clear", false, "also set PROCESS_* to a window that matches nothing")
	cmd.Flags().BoolVarP(&opts.Yes, "yes", "y", false, "do not ask for confirmation (required when stdin or stderr is not a terminal)")
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "print the plan and change nothing")
	cmdutil.AddAuditFlags(cmd, &opts.Audit, true)
	return cmd
}

// runProcessorDisarm prints the plan, asks, then disables the mapping and
// with --clear sets a window that matches nothing, keeping the audit record.
func runProcessorDisarm(ctx context.Context, opts *ProcessorOptions) (err error) {
	f := opts.Factory
	lc, fn, m, err := openProcessor(ctx, opts)
	if err != nil {
		return err
	}
	w := f.IO.ErrOut
	fmt.Fprintf(w, "pushdlq processor disarm: %s\n  disable mapping %s (now %s)\n", output.Escape(fn.ARN), m.UUID, m.State)
	vars := pushpolicy.ProcessVars(pushpolicy.MatchNothing)
	if opts.Clear {
		if err := checkRunnable(fn, vars, &pushpolicy.MatchNothing); err != nil {
			return err
		}
		fmt.Fprintln(w, "  then set a window that matches nothing:")
		printVarChanges(w, fn.Env, vars)
	}
	if ok, err := confirmChange(f, opts, "Disarm the processor?"); !ok {
		return err
	}
	rec, err := opts.beginRecord(ctx, fn, "disarm")
	if err != nil {
		return err
	}
	defer func() { rec.finish(ctx, f, err) }()
	after, err := lambdactl.SetMapping(ctx, lc, m.UUID, false, nil)
	if err != nil {
		return err
	}
	rec.mapping(after.UUID, "disabled", nil)
	fmt.Fprintf(w, "mapping %s %s\n", after.UUID, after.State)
	if !opts.Clear {
		return nil
	}
	// Read again: the revision the mapping change may not touch, but
	// someone else may have.
	if fn, err = lambdactl.Get(ctx, lc, fn.Name); err != nil {
		return err
	}
	if err := lambdactl.SetEnv(ctx, lc, fn, pushpolicy.MergeVars(fn.Env, vars)); err != nil {
		return fmt.Errorf("the mapping is disabled, but clearing the window failed: %w", err)
	}
	rec.settings(fn.Env, vars)
	if _, err := lambdactl.Wait(ctx, lc, fn.Name, f.pollInterval(), nil); err != nil {
		return fmt.Errorf("the mapping is disabled, but: %w", err)
	}
	fmt.Fprintf(w, "PROCESS_* cleared on %s\n", fn.Name)
	return nil
}
