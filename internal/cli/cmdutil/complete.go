package cmdutil

import (
	"github.com/spf13/cobra"
)

// CompleteFlag gives complete to the flag called name of every command of
// the tree under root that defines it (its own flag, not one inherited).
// A flag that already has a completion keeps it.
func CompleteFlag(root *cobra.Command, name string, complete cobra.CompletionFunc) {
	if root.LocalNonPersistentFlags().Lookup(name) != nil || root.PersistentFlags().Lookup(name) != nil {
		if _, ok := root.GetFlagCompletionFunc(name); !ok {
			_ = root.RegisterFlagCompletionFunc(name, complete)
		}
	}
	for _, c := range root.Commands() {
		CompleteFlag(c, name, complete)
	}
}

// NoFiles completes nothing, and not with file names: for flags whose
// values are names of things no shell can list (a collection, an error
// class).
func NoFiles(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return nil, cobra.ShellCompDirectiveNoFileComp
}
