package historycmd

import (
	"context"
	"strings"

	"github.com/spf13/cobra"

	"github.com/deadletter/deadletter/internal/cli/cmdutil"
)

// Help is a tool's history verb's help.
type Help struct {
	Short, Long, Example string
}

// RecordFlag is a flag that narrows the list to the runs that touched one
// record (dla's --key, pushdlq's --notification), each with what it did to
// it.
type RecordFlag struct {
	Name, Usage string
	Value       *string
}

// NewCmd builds a tool's `history` verb: its help, flags (the tool's own,
// added before the common ones: dla's --archive), the common flags into o
// (AddFlags), then the record flags; run is the tool's, called with the
// command's context.
func NewCmd(help Help, o *Options, flags func(*cobra.Command), records []RecordFlag, run func(context.Context) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "history [flags]",
		Short:   help.Short,
		Long:    help.Long,
		Example: help.Example,
		Args:    cmdutil.UsageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return run(cmd.Context())
		},
	}
	if flags != nil {
		flags(cmd)
	}
	AddFlags(cmd, o)
	for _, r := range records {
		cmd.Flags().StringVar(r.Value, r.Name, "", r.Usage)
	}
	return cmd
}

// OneRecord refuses a run given more than one record flag: one record at
// a time.
func OneRecord(records []RecordFlag) error {
	var names []string
	set := 0
	for _, r := range records {
		names = append(names, "--"+r.Name)
		if *r.Value != "" {
			set++
		}
	}
	if set < 2 {
		return nil
	}
	list := names[len(names)-1]
	if len(names) > 1 {
		list = strings.Join(names[:len(names)-1], ", ") + " and " + list
	}
	return cmdutil.UsageErrorf("%s cannot be combined: one record at a time", list)
}
