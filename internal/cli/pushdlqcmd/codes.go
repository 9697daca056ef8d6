package pushdlqcmd

import (
	"context"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/deadletter/deadletter/internal/cli/cmdutil"
	"github.com/deadletter/deadletter/internal/cli/output"
	"github.com/deadletter/deadletter/internal/pushpolicy"
)

// CodesOptions are `pushdlq codes`'s options.
type CodesOptions struct {
	Factory *Factory
	Output  *cmdutil.Output
}

// NewCmdCodes builds `pushdlq codes`.
func NewCmdCodes(f *Factory) *cobra.Command {
	opts := &CodesOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "codes",
		Short: "List the push error codes (PushErrorCode)",
		Args:  cmdutil.UsageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.Output.Validate(); err != nil {
				return err
			}
			return runCodes(cmd.Context(), opts)
		},
	}
	opts.Output = cmdutil.AddOutputFlag(cmd, "table", "json")
	return cmd
}

// runCodes prints the code table.
func runCodes(_ context.Context, opts *CodesOptions) error {
	f := opts.Factory
	if opts.Output.Value == "json" {
		return output.WriteJSON(f.IO.Out, pushpolicy.Codes)
	}
	t := output.NewTable(f.IO, "CODE", "NAME", "DESCRIPTION")
	for _, c := range pushpolicy.Codes {
		if err := t.Row(strconv.Itoa(c.Code), c.Name, c.Description); err != nil {
			return err
		}
	}
	return t.Flush()
}

// knownCodes lists the code table in one line: "1001 PublishFailed, ...".
func knownCodes() string {
	parts := make([]string, len(pushpolicy.Codes))
	for i, c := range pushpolicy.Codes {
		parts[i] = strconv.Itoa(c.Code) + " " + c.Name
	}
	return strings.Join(parts, ", ")
}

func joinInts(ns []int) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, ", ")
}
