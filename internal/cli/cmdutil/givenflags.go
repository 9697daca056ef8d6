package cmdutil

import (
	"slices"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// GivenFlags are the flags given to cmd (its own and the root's), as words
// that give them again, but those named in leave: how a printed command
// that resumes or re-runs an invocation repeats it. A flag of many values
// (--granule A --granule B) is given once per value, never as the
// "[A,B]" its String shows.
func GivenFlags(cmd *cobra.Command, leave ...string) []string {
	var words []string
	cmd.Flags().Visit(func(fl *pflag.Flag) {
		if slices.Contains(leave, fl.Name) {
			return
		}
		if sv, ok := fl.Value.(pflag.SliceValue); ok {
			for _, v := range sv.GetSlice() {
				words = append(words, "--"+fl.Name, v)
			}
			return
		}
		switch {
		case fl.Value.Type() == "bool" && fl.Value.String() == "true":
			words = append(words, "--"+fl.Name)
		case fl.Value.Type() == "bool":
			words = append(words, "--"+fl.Name+"=false")
		default:
			words = append(words, "--"+fl.Name, fl.Value.String())
		}
	})
	return words
}
