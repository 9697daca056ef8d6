package dlacmd

import (
	"strings"
	"testing"
)

// TestSelectionFlagsCompleteNoFileNames pins that a collection, an error
// class (and the other selection values no shell can list) are never
// completed with the names of the files in the current directory:
// cobra's directive :4 is ShellCompDirectiveNoFileComp.
func TestSelectionFlagsCompleteNoFileNames(t *testing.T) {
	for _, cmd := range []string{"search", "stats", "triage", "recover", "report", "trace"} {
		for _, flag := range []string{"--collection", "--error-class", "--granule", "--execution"} {
			r := run(t, false, nil, "", "__complete", cmd, flag, "")
			if r.code != 0 || strings.TrimSpace(r.stdout) != ":4" {
				t.Errorf("dla __complete %s %s '': exit %d, %q", cmd, flag, r.code, r.stdout)
			}
		}
	}
}
