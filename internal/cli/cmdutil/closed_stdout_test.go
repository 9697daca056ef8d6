package cmdutil

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/spf13/cobra"
)

// A command that only prints and finds stdout closed (`dla show … | head
// -1`) exits 0 and says nothing, as it does when its output fitted the
// pipe before the reader left; one that changes things (MutationError)
// exits 1 saying why (issue 38 item 5).
func TestClosedStdoutIsAQuietSuccessUnlessTheCommandChangesThings(t *testing.T) {
	epipe := fmt.Errorf("write stdout: %w", syscall.EPIPE)
	for _, c := range []struct {
		err      error
		code     int
		saysWhat bool
	}{{epipe, ExitOK, false}, {MutationError(epipe), ExitFailure, true}} {
		root := &cobra.Command{Use: "dla", RunE: func(*cobra.Command, []string) error { return c.err }}
		var errOut bytes.Buffer
		SetupRoot(root, &bytes.Buffer{}, &errOut)
		code := Execute(context.Background(), root, nil, &errOut)
		if code != c.code || strings.Contains(errOut.String(), "stdout was closed") != c.saysWhat {
			t.Errorf("%v: exit %d, stderr %q; want exit %d", c.err, code, errOut.String(), c.code)
		}
	}
}
