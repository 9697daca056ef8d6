package pushdlqcmd

import (
	"fmt"
	"io"
	"sort"

	"github.com/deadletter/deadletter/internal/cli/output"
	"github.com/deadletter/deadletter/internal/pushpolicy"
)

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
