package pushdlqcmd

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deadletter/deadletter/internal/cli/iostreams"
	"github.com/deadletter/deadletter/internal/sqsmove"
	"github.com/deadletter/deadletter/internal/testsupport"
	"github.com/deadletter/deadletter/internal/workflow/pushexport"
)

// An export to FILE while another run is writing FILE.partial (it holds
// the lock) is refused saying so: it said the earlier export "stopped (or
// was killed)" and printed a --resume to finish it, while that run was
// alive and finishing it itself.
func TestExportWhileAnotherRunWritesThePartialFileSaysItIsRunning(t *testing.T) {
	c := testsupport.SQSClient(t)
	dlq := testsupport.NewQueue(t, c, "wr", false)
	out := filepath.Join(t.TempDir(), "drained.ndjson")
	if err := os.WriteFile(out+".partial", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	unlock, err := pushexport.Lock(out)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	ios, _, _, stderr := iostreams.Test()
	f := NewFactory(ios, func(string) string { return "" })
	f.SQS = func(context.Context) (sqsmove.API, string, error) { return c, "SQS", nil }
	code := Run(context.Background(), f, []string{"export", "--dlq", dlq, "--out", out, "--delete", "--yes"})
	if code != 2 || !strings.Contains(stderr.String(), "is being written by another export") || strings.Contains(stderr.String(), "--resume") {
		t.Fatalf("exit %d: want 2, saying another export is writing it, with no --resume:\n%s", code, stderr)
	}
}
