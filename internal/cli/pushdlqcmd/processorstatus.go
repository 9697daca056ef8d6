package pushdlqcmd

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/spf13/cobra"

	"github.com/deadletter/deadletter/internal/cli/cmdutil"
	"github.com/deadletter/deadletter/internal/cli/output"
	"github.com/deadletter/deadletter/internal/lambdactl"
	"github.com/deadletter/deadletter/internal/pushpolicy"
	"github.com/deadletter/deadletter/internal/sqsmove"
	"github.com/deadletter/deadletter/internal/workflow/pushreplay"
)

// newCmdProcessorStatus builds `pushdlq processor status`.
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

// runProcessorStatus reads the function, its mappings and the queue
// depths, prints them, and with --watch the depths again until Ctrl-C.
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

// isDigits reports a non-empty string of ASCII digits.
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
