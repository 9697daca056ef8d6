package pushdlqcmd

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/cli/iostreams"
	"github.com/deadletter/deadletter/internal/sqsmove"
	"github.com/deadletter/deadletter/internal/testsupport"
	"github.com/deadletter/deadletter/internal/workflow/pushexport"
)

// A FILE.partial left by an export of queue A, resumed with --dlq B: its
// lines are A's, so none would be found in B and deleted from A, and B's
// messages would join them in the file (exit 0, A's messages in the file
// and in A). The resume is refused (exit 2) naming A, before anything of
// B is read; the partial file is left as it was.
func TestResumeOfAnotherQueuesExportIsRefused(t *testing.T) {
	c := testsupport.SQSClient(t)
	a := testsupport.NewQueue(t, c, "ra", false)
	b := testsupport.NewQueue(t, c, "rb", false)
	testsupport.SendBodies(t, c, b, []string{`{"b":1}`, `{"b":2}`, `{"b":3}`}, nil)
	out := filepath.Join(t.TempDir(), "drained.ndjson")
	e, err := pushexport.Create(out, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.RecordSource(a); err != nil {
		t.Fatal(err)
	}
	if err := e.Write(&sqsmove.Message{MessageID: "a-1", Body: `{"a":1}`}); err != nil {
		t.Fatal(err)
	}
	if err := e.Sync(); err != nil {
		t.Fatal(err)
	}
	e.Abort()
	before, _ := os.ReadFile(out + ".partial")

	ios, _, stdout, stderr := iostreams.Test()
	f := NewFactory(ios, func(string) string { return "" })
	f.SQS = func(context.Context) (sqsmove.API, string, error) { return c, "SQS", nil }
	code := Run(context.Background(), f, []string{"export", "--dlq", b, "--out", out, "--delete", "--resume", "--yes"})
	t.Logf("exit %d\n%s\n%s", code, stdout, stderr)
	if code != 2 || !strings.Contains(stderr.String(), "was exported from "+sqsmove.Name(a)) ||
		!strings.Contains(stderr.String(), "--dlq "+a) {
		t.Fatalf("exit %d: want 2, naming %s and the --dlq that finishes it", code, sqsmove.Name(a))
	}
	if after, _ := os.ReadFile(out + ".partial"); string(after) != string(before) {
		t.Errorf("the partial file changed: %q, was %q", after, before)
	}
	if n := len(testsupport.Drain(t, c, b, time.Second)); n != 3 {
		t.Errorf("%d of B's 3 messages are still in B", n)
	}
}
