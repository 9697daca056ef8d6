package pushdlqcmd

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/cli/iostreams"
	"github.com/deadletter/deadletter/internal/sqsmove"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// waitThenYes answers "yes" once ready says so (or after a minute).
type waitThenYes struct {
	ready func() bool
	done  bool
}

func (r *waitThenYes) Read(p []byte) (int, error) {
	if r.done {
		return 0, io.EOF
	}
	for deadline := time.Now().Add(time.Minute); !r.ready() && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	r.done = true
	return copy(p, "yes\n"), nil
}

// An export --delete whose hold on some messages was lost before the
// delete (a renewal of their visibility refused: another consumer has
// them) cannot delete those: it says so, counts them as not deleted, and
// exits 3. Before, it ended with exported 20, deleted 0, delete_failed 0
// and exit 0, as if the file and the DLQ did not both hold them.
func TestExportDeleteWhoseHoldWasLostSaysTheMessagesStayInTheDLQ(t *testing.T) {
	c := testsupport.SQSClient(t)
	dlq, _ := testsupport.NewPushQueues(t, c, "xl", 1)
	var bodies []string
	for i := range 20 {
		bodies = append(bodies, `{"n":`+strconv.Itoa(i)+`}`)
	}
	testsupport.SendBodies(t, c, dlq, bodies, nil)
	proxy := testsupport.NewProxy(t, testsupport.SQSEndpoint(t))
	var refused atomic.Int32
	proxy.SetHook(func(op string, body []byte) ([]byte, *testsupport.Reply) {
		if op != "ChangeMessageVisibilityBatch" {
			return nil, nil
		}
		var in struct{ Entries []struct{ Id string } }
		if err := json.Unmarshal(body, &in); err != nil {
			return nil, nil
		}
		type failed struct {
			Id, Code, Message string
			SenderFault       bool
		}
		out := struct {
			Successful []struct{} `json:"Successful"`
			Failed     []failed   `json:"Failed"`
		}{Successful: []struct{}{}}
		for _, e := range in.Entries {
			out.Failed = append(out.Failed, failed{Id: e.Id, Code: "ReceiptHandleIsInvalid", Message: "The receipt handle has expired.", SenderFault: true})
		}
		refused.Add(int32(len(in.Entries)))
		b, _ := json.Marshal(out)
		return nil, &testsupport.Reply{Status: 200, Body: string(b)}
	})

	ios, _, stdout, stderr := iostreams.Test()
	ios.In = &waitThenYes{ready: func() bool { return refused.Load() >= 20 }}
	ios.SetTTY(true, false, true)
	f := NewFactory(ios, func(string) string { return "" })
	f.SQS = func(context.Context) (sqsmove.API, string, error) {
		return testsupport.SQSClientAt(proxy.URL), "SQS via a proxy", nil
	}
	file := filepath.Join(t.TempDir(), "out.ndjson")
	code := Run(context.Background(), f, []string{"export", "--dlq", dlq, "--out", file, "--delete", "--visibility-timeout", "2s", "-o", "json"})
	t.Logf("exit %d\n%s\n%s", code, stdout, stderr)
	var sum ExportSummary
	if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil {
		t.Fatalf("no summary: %v", err)
	}
	b, err := os.ReadFile(file)
	if err != nil || strings.Count(string(b), "\n") != 20 || sum.Exported != 20 {
		t.Fatalf("the file holds %d lines (%v), the summary %d exported; want 20", strings.Count(string(b), "\n"), err, sum.Exported)
	}
	if code != 3 || sum.Deleted+sum.DeleteFailed != sum.Exported || sum.DeleteFailed == 0 ||
		!strings.Contains(stderr.String(), "they are in the DLQ as well as in the file") {
		t.Fatalf("exit %d, deleted %d, delete_failed %d: want exit 3 and every exported message deleted or counted as not deleted, said on stderr", code, sum.Deleted, sum.DeleteFailed)
	}
	// Nothing was lost: what was not deleted is still in the DLQ.
	if left := len(testsupport.Drain(t, c, dlq, time.Second)); left != sum.DeleteFailed {
		t.Errorf("%d messages left in the DLQ, the summary says %d not deleted", left, sum.DeleteFailed)
	}
}
