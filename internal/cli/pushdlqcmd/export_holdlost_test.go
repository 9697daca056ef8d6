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
// and exit 0, as if the file and the DLQ did not both hold them. The file
// stays FILE.partial (a first run deletes before it commits), and the
// --resume it prints finishes it: every message in FILE once, none in the
// DLQ.
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
	if _, err := os.Stat(file); err == nil {
		t.Errorf("%s exists while messages of it are still in the DLQ", file)
	}
	b, err := os.ReadFile(file + ".partial")
	if err != nil || strings.Count(string(b), "\n") != 20 || sum.Exported != 20 || sum.File != file+".partial" {
		t.Fatalf("the file holds %d lines (%v), the summary %d exported; want 20", strings.Count(string(b), "\n"), err, sum.Exported)
	}
	if code != 3 || sum.Deleted+sum.DeleteFailed != sum.Exported || sum.DeleteFailed == 0 ||
		!strings.Contains(stderr.String(), "they are in the DLQ as well as in the file") {
		t.Fatalf("exit %d, deleted %d, delete_failed %d: want exit 3 and every exported message deleted or counted as not deleted, said on stderr", code, sum.Deleted, sum.DeleteFailed)
	}
	if !strings.Contains(stderr.String(), "--resume") {
		t.Fatalf("no --resume command printed:\n%s", stderr)
	}
	// The resume, straight to SQS, once the lost holds ran out: every
	// message in the file once, none left in the DLQ.
	ios, _, stdout, stderr = iostreams.Test()
	f = NewFactory(ios, func(string) string { return "" })
	f.SQS = func(context.Context) (sqsmove.API, string, error) { return c, "SQS", nil }
	code = Run(context.Background(), f, []string{"export", "--dlq", dlq, "--out", file, "--delete", "--resume", "--yes", "--wait-held", "1m"})
	if code != 0 {
		t.Fatalf("resume: exit %d\n%s\n%s", code, stdout, stderr)
	}
	lines, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(string(lines)), "\n") {
		var m sqsmove.Message
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		seen[m.Body]++
	}
	for _, b := range bodies {
		if seen[b] != 1 {
			t.Errorf("%s is in %s %d times", b, file, seen[b])
		}
	}
	if left := len(testsupport.Drain(t, c, dlq, time.Second)); left != 0 {
		t.Errorf("%d messages left in the DLQ after the resume", left)
	}
}
