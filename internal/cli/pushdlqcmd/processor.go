package pushdlqcmd

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/spf13/cobra"

	"github.com/deadletter/deadletter/internal/audit"
	"github.com/deadletter/deadletter/internal/cli/cmdutil"
	"github.com/deadletter/deadletter/internal/cli/output"
	"github.com/deadletter/deadletter/internal/lambdactl"
	"github.com/deadletter/deadletter/internal/pushpolicy"
	"github.com/deadletter/deadletter/internal/sqsmove"
	"github.com/deadletter/deadletter/internal/workflow/pushreplay"
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

func processorFlags(cmd *cobra.Command, opts *ProcessorOptions) {
	cmd.Flags().StringVar(&opts.Function, "function", "", "the push-dlq function: name or ARN (required)")
	cmd.Flags().StringVar(&opts.Mapping, "mapping", "", "the event source mapping's UUID, when the function has more than one")
}

func newCmdProcessorStatus(f *Factory) *cobra.Command {
	opts := &ProcessorOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "status --function NAME",
		Short: "Show the push-dlq function's window, codes, mapping and queue depths",
		Long: `Show the push-dlq function's PROCESS_* window and codes, its event source
mapping, and the depths of the DLQ and the priority queues (runbook step 6);
--watch prints the depths again every --interval until Ctrl-C.

` + processorEndpointHelp,
		Example: `  pushdlq processor status --function my-push-dlq
  pushdlq processor status --function my-push-dlq --watch --interval 10s`,
		Args: cmdutil.UsageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.Output.Validate(); err != nil {
				return err
			}
			if opts.Function == "" {
				return cmdutil.UsageErrorf("--function is required")
			}
			if opts.Interval < time.Second {
				return cmdutil.UsageErrorf("--interval must be at least 1s")
			}
			if opts.Watch && opts.Output.Value == "json" {
				return cmdutil.UsageErrorf("--watch prints lines; it does not go with -o json")
			}
			return runProcessorStatus(cmd.Context(), opts)
		},
	}
	processorFlags(cmd, opts)
	cmd.Flags().BoolVar(&opts.Watch, "watch", false, "after the status, print the queue depths every --interval until Ctrl-C")
	cmd.Flags().DurationVar(&opts.Interval, "interval", 5*time.Second, "how often --watch reads the depths")
	opts.Output = cmdutil.AddOutputFlag(cmd, "table", "json")
	return cmd
}

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
			policy, err := parsePolicy(f, opts.Window, opts.Codes, opts.AllowWideWindow)
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

// parsePolicy reads --window and --codes, both required, and applies
// replay's guardrails.
func parsePolicy(f *Factory, window, codes string, allowWide bool) (pushpolicy.Policy, error) {
	var p pushpolicy.Policy
	return p, policyFlags(f, &p, window, codes, allowWide, false, "")
}

// policyFlags sets p's window and codes from --window and --codes, each
// required unless fromElsewhere (p holds them already; alt names that
// source in the error), warns
// about codes not in the table, and checks the guardrails: the window's
// order, and '*' over 24 hours only with allowWide. Replay and processor
// arm read them this one way.
func policyFlags(f *Factory, p *pushpolicy.Policy, window, codes string, allowWide, fromElsewhere bool, alt string) error {
	or := ""
	if alt != "" {
		or = " (or " + alt + ")"
	}
	if window != "" {
		s, e, err := pushpolicy.ParseWindow(window)
		if err != nil {
			return cmdutil.UsageErrorf("--window: %v", err)
		}
		p.Start, p.End = s, e
	} else if !fromElsewhere {
		return cmdutil.UsageErrorf("--window%s is required", or)
	}
	if codes != "" {
		all, list, err := pushpolicy.ParseCodes(codes)
		if err != nil {
			return cmdutil.UsageErrorf("--codes: %v", err)
		}
		p.AllCodes, p.Codes = all, list
	} else if !fromElsewhere {
		return cmdutil.UsageErrorf("--codes%s is required", or)
	}
	if unknown := pushpolicy.UnknownCodes(p.Codes); len(unknown) > 0 {
		fmt.Fprintf(f.IO.ErrOut, "warning: error code %s: not in the push error code table (known: %s); check for a typo\n",
			joinInts(unknown), knownCodes())
	}
	if err := p.Validate(allowWide); err != nil {
		return cmdutil.UsageErrorf("%v", err)
	}
	return nil
}

// ProcessorStatus is the -o json form of processor status.
type ProcessorStatus struct {
	Function         string              `json:"function"`
	ARN              string              `json:"arn"`
	Revision         string              `json:"revision_id"`
	LastUpdateStatus string              `json:"last_update_status"`
	WindowStart      *string             `json:"window_start"`
	WindowEnd        *string             `json:"window_end"`
	AllCodes         bool                `json:"all_codes"`
	Codes            []CodeName          `json:"codes"`
	SettingsError    *string             `json:"settings_error"`
	Mappings         []lambdactl.Mapping `json:"mappings"`
	Queues           []QueueDepth        `json:"queues"`
}

// CodeName is an error code with its name from the push error code table.
type CodeName struct {
	Code int    `json:"code"`
	Name string `json:"name"`
}

// QueueDepth is one queue's approximate depth.
type QueueDepth struct {
	Role     string  `json:"role"` // dlq or target
	Name     string  `json:"name"`
	URL      string  `json:"url"`
	Visible  int64   `json:"visible"`
	InFlight int64   `json:"in_flight"`
	Delayed  int64   `json:"delayed"`
	Error    *string `json:"error"`
}

func runProcessorStatus(ctx context.Context, opts *ProcessorOptions) error {
	f := opts.Factory
	lc, err := f.Lambda(ctx)
	if err != nil {
		return err
	}
	fn, err := lambdactl.Get(ctx, lc, opts.Function)
	if err != nil {
		return err
	}
	maps, err := lambdactl.Mappings(ctx, lc, fn.Name)
	if err != nil {
		return err
	}
	st := ProcessorStatus{Function: fn.Name, ARN: fn.ARN, Revision: fn.RevisionID, LastUpdateStatus: fn.LastUpdateStatus, Mappings: maps}
	if p, err := pushpolicy.PolicyFromVars(fn.Env); err != nil {
		msg := err.Error()
		st.SettingsError = &msg
	} else {
		s, e := isoMs(p.Start), isoMs(p.End)
		st.WindowStart, st.WindowEnd, st.AllCodes = &s, &e, p.AllCodes
		for _, c := range p.Codes {
			st.Codes = append(st.Codes, CodeName{Code: c, Name: pushpolicy.CodeName(c)})
		}
	}
	api, _, err := f.SQS(ctx)
	if err != nil {
		return err
	}
	queues := processorQueues(ctx, api, fn.Env)
	st.Queues = depths(ctx, api, queues)
	if opts.Output.Value == "json" {
		return output.WriteJSON(f.IO.Out, st)
	}
	if err := printProcessorStatus(f.IO.Out, st); err != nil {
		return err
	}
	if !opts.Watch {
		return nil
	}
	t := time.NewTicker(opts.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil // the operator stopped watching
		case <-t.C:
		}
		if _, err := fmt.Fprintln(f.IO.Out, depthLine(f.Now(), depths(ctx, api, queues))); err != nil {
			return err
		}
	}
}

// processorQueues are the DLQ and the priority queues of the function's
// environment: ${base}P<n> for every queue whose name starts so.
func processorQueues(ctx context.Context, api sqsmove.API, env map[string]string) []QueueDepth {
	var qs []QueueDepth
	if dlq := env[pushpolicy.EnvDLQURL]; dlq != "" {
		qs = append(qs, QueueDepth{Role: "dlq", URL: dlq, Name: sqsmove.Name(dlq)})
	}
	base := env[pushpolicy.EnvBaseURL]
	lister, ok := api.(interface {
		ListQueues(context.Context, *sqs.ListQueuesInput, ...func(*sqs.Options)) (*sqs.ListQueuesOutput, error)
	})
	if base == "" || !ok {
		return qs
	}
	in := &sqs.ListQueuesInput{QueueNamePrefix: aws.String(sqsmove.Name(base) + "P")}
	var targets []string
	for {
		out, err := lister.ListQueues(ctx, in)
		if err != nil {
			msg := "listing the priority queues: " + pushreplay.ErrorReason(err)
			return append(qs, QueueDepth{Role: "target", Name: sqsmove.Name(base) + "P*", Error: &msg})
		}
		for _, u := range out.QueueUrls {
			if rest, ok := strings.CutPrefix(sqsmove.Name(u), sqsmove.Name(base)+"P"); ok && isDigits(rest) {
				targets = append(targets, base+"P"+rest)
			}
		}
		if aws.ToString(out.NextToken) == "" {
			break
		}
		in.NextToken = out.NextToken
	}
	sort.Strings(targets)
	for _, u := range targets {
		qs = append(qs, QueueDepth{Role: "target", URL: u, Name: sqsmove.Name(u)})
	}
	return qs
}

func isDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

// depths reads each queue's depth; a queue that cannot be read says why.
func depths(ctx context.Context, api sqsmove.API, qs []QueueDepth) []QueueDepth {
	out := make([]QueueDepth, len(qs))
	for i, q := range qs {
		out[i] = q
		if q.URL == "" || q.Error != nil {
			continue
		}
		d, err := sqsmove.Describe(ctx, api, q.URL)
		if err != nil {
			msg := pushreplay.ErrorReason(err)
			out[i].Error = &msg
			continue
		}
		out[i].Visible, out[i].InFlight, out[i].Delayed = d.Visible, d.InFlight, d.Delayed
	}
	return out
}

func depthLine(now time.Time, qs []QueueDepth) string {
	parts := []string{now.UTC().Format("15:04:05Z")}
	for _, q := range qs {
		if q.Error != nil {
			parts = append(parts, fmt.Sprintf("%s ?", output.Escape(q.Name)))
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %d (%d in flight, %d delayed)", output.Escape(q.Name), q.Visible, q.InFlight, q.Delayed))
	}
	return strings.Join(parts, "  ")
}

func printProcessorStatus(w io.Writer, st ProcessorStatus) error {
	var b bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("function   %s (revision %s, last update %s)\n", output.Escape(st.ARN), output.Escape(st.Revision), output.Escape(st.LastUpdateStatus))
	switch {
	case st.SettingsError != nil:
		p("settings   not usable: %s\n", output.Escape(*st.SettingsError))
	default:
		p("window     %s … %s (inclusive, on createdAt)\n", *st.WindowStart, *st.WindowEnd)
		if st.AllCodes {
			p("codes      * (every code)\n")
		} else {
			names := make([]string, len(st.Codes))
			for i, c := range st.Codes {
				names[i] = fmt.Sprintf("%d %s", c.Code, c.Name)
			}
			p("codes      %s\n", strings.Join(names, ", "))
		}
	}
	if len(st.Mappings) == 0 {
		p("mapping    none: the function has no event source mapping\n")
	}
	for _, m := range st.Mappings {
		conc := "not set"
		if m.MaxConcurrency != nil {
			conc = fmt.Sprint(*m.MaxConcurrency)
		}
		p("mapping    %s %s, batch size %d, maximum concurrency %s, from %s\n", m.UUID, m.State, m.BatchSize, conc, output.Escape(m.EventSourceARN))
	}
	for i, q := range st.Queues {
		label := "queues    "
		if i > 0 {
			label = "          "
		}
		if q.Error != nil {
			p("%s %s %s: %s\n", label, q.Role, output.Escape(q.Name), output.Escape(*q.Error))
			continue
		}
		p("%s %s %s: %d visible, %d in flight, %d delayed\n", label, q.Role, output.Escape(q.Name), q.Visible, q.InFlight, q.Delayed)
	}
	_, err := w.Write(b.Bytes())
	return err
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

// printVarChanges lists each PROCESS_* variable, before and after.
func printVarChanges(w io.Writer, current, vars map[string]string) {
	keys := make([]string, 0, len(vars))
	for k := range vars {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		was, ok := current[k]
		if !ok {
			was = "(not set)"
		}
		fmt.Fprintf(w, "  %-20s %s -> %s\n", k, output.Escape(was), vars[k])
	}
	others := len(pushpolicy.MergeVars(current, vars)) - len(vars)
	fmt.Fprintf(w, "  (the other %s %s kept as %s)\n", output.Plural(others, "variable"), output.Agree(others, "is", "are"), output.Agree(others, "it is", "they are"))
}
