package pushdlqcmd

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/deadletter/deadletter/internal/cli/iostreams"
	"github.com/deadletter/deadletter/internal/shellword"
	"github.com/deadletter/deadletter/internal/sqsmove"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// pushdlqBinary is cmd/pushdlq, for a kill test of this package.
func pushdlqBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	return testsupport.Binary(t, "github.com/deadletter/deadletter/cmd/pushdlq", "PUSHDLQ_E2E_BIN")
}

// runExportAt runs pushdlq in-process against SQS at endpoint.
func runExportAt(endpoint string, args ...string) (code int, stdout, stderr string) {
	ios, _, out, errOut := iostreams.Test()
	f := NewFactory(ios, func(string) string { return "" })
	f.SQS = func(context.Context) (sqsmove.API, string, error) {
		return testsupport.SQSClientAt(endpoint), "SQS", nil
	}
	code = Run(context.Background(), f, args)
	return code, out.String(), errOut.String()
}

// releaseHeld makes messages another consumer holds visible again (their
// hold is long enough that no scan sees them come back on its own).
func releaseHeld(t *testing.T, queueURL string, held []types.Message) {
	t.Helper()
	c := testsupport.SQSClient(t)
	for _, m := range held {
		if _, err := c.ChangeMessageVisibility(context.Background(), &sqs.ChangeMessageVisibilityInput{
			QueueUrl: aws.String(queueURL), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0,
		}); err != nil {
			t.Fatal(err)
		}
	}
}

// exportBodies seeds a queue with n bodies.
func exportBodies(t *testing.T, prefix string, n int) (dlq string, bodies []string) {
	t.Helper()
	c := testsupport.SQSClient(t)
	dlq = testsupport.NewQueue(t, c, prefix, false)
	for i := range n {
		bodies = append(bodies, fmt.Sprintf(`{"action":"push","priority":1,"errorCode":1004,"n":%d}`, i))
	}
	testsupport.SendBodies(t, c, dlq, bodies, nil)
	return dlq, bodies
}

// exportCensus is where each body is: "file" (each line of file, which
// must hold no message id twice) and "dlq" (drained, waiting for the
// holds of a killed run to run out).
func exportCensus(t *testing.T, dlq, file string) map[string][]string {
	t.Helper()
	places := map[string][]string{}
	for _, m := range testsupport.Drain(t, testsupport.SQSClient(t), dlq, 6*time.Second) {
		places[*m.Body] = append(places[*m.Body], "dlq")
	}
	testsupport.ExportFileCensus(t, file, places)
	return places
}

// An export without --delete SIGKILLed mid-scan leaves FILE.partial and
// the messages it had received in flight until its --visibility-timeout
// runs out. A --resume without --delete run right after used not to wait
// for them, as the --delete one does: it wrote only the visible ones and
// exited 0 ("wrote 1736 messages" of 3,000). It waits now, and FILE holds
// every message once (and the DLQ every one, as nothing was deleted).
func TestKilledExportResumedWithoutDeleteWaitsAndWritesEveryMessage(t *testing.T) {
	bin := pushdlqBinary(t)
	const n = 60
	dlq, bodies := exportBodies(t, "kn", n)
	proxy := testsupport.NewProxy(t, testsupport.SQSEndpoint(t))
	third, release := make(chan struct{}), make(chan struct{})
	t.Cleanup(func() { close(release) }) // before the proxy closes
	var mu sync.Mutex
	receives := 0
	proxy.SetHook(func(op string, _ []byte) ([]byte, *testsupport.Reply) {
		if op != "ReceiveMessage" {
			return nil, nil
		}
		mu.Lock()
		receives++
		r := receives
		mu.Unlock()
		if r == 4 {
			close(third) // three receives answered: the run holds their messages
		}
		if r >= 4 {
			<-release // the run never finishes before it is killed
		}
		return nil, nil
	})
	file := filepath.Join(t.TempDir(), "drained.ndjson")
	cmd := exec.Command(bin, "export", "--dlq", dlq, "--out", file, "--visibility-timeout", "10s", "--endpoint-url", proxy.URL)
	cmd.Env = append(os.Environ(), "AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "AWS_REGION=us-east-1", "AWS_EC2_METADATA_DISABLED=true", "DEADLETTER_NO_PROMPT=1")
	proc := testsupport.StartProc(t, cmd)
	proc.KillWhen(t, 60*time.Second, "the export never received three times", third)
	if _, err := os.Stat(file + ".partial"); err != nil {
		t.Fatalf("the killed export left no partial file: %v\n%s", err, proc.Stderr.String())
	}
	q, err := sqsmove.Describe(context.Background(), testsupport.SQSClient(t), dlq)
	if err != nil || q.InFlight == 0 {
		t.Fatalf("nothing in flight after the kill (%+v, %v): the test shows nothing", q, err)
	}
	t.Logf("killed holding %d messages in flight", q.InFlight)

	code, out, stderr := runExportAt(testsupport.SQSEndpoint(t), "export", "--dlq", dlq, "--out", file, "--resume", "-o", "json")
	t.Logf("resume: exit %d\n%s\n%s", code, out, stderr)
	if code != 0 {
		t.Fatalf("exit %d, want 0", code)
	}
	if !strings.Contains(stderr, "waiting for them") {
		t.Error("the resume did not wait for the killed run's messages")
	}
	if s := exportSummary(t, out); s.Exported != n || s.Deleted != 0 {
		t.Errorf("summary %+v: want %d exported, none deleted", s, n)
	}
	places := exportCensus(t, dlq, file)
	if got := len(testsupport.ReadLines(t, file)); got != n {
		t.Errorf("%d lines in %s, want %d", got, file, n)
	}
	for _, b := range bodies {
		if at := places[b]; len(at) != 2 || !strings.Contains(strings.Join(at, ","), "file") || !strings.Contains(strings.Join(at, ","), "dlq") {
			t.Errorf("%s is in %v, want in the file once and in the DLQ", b, at)
		}
	}
}

// A resume without --delete whose scan could not receive messages in
// flight elsewhere (another consumer received them meanwhile) says how
// many were not written, keeps FILE.partial (exit 3) and prints the
// command; run once they are visible, that command writes every message
// once. Before, it made FILE of what it read and exited 0.
func TestResumeWithoutDeleteSaysHowManyWereInFlightAndKeepsThePartialFile(t *testing.T) {
	w, file, _ := stoppedExport(t, 12, 100, 6, 0, false)
	c := testsupport.SQSClient(t)
	var once sync.Once
	var held []types.Message
	w.faults.SetHook(func(op string, _ []byte) ([]byte, *testsupport.Reply) {
		if op == "ReceiveMessage" {
			once.Do(func() { held = testsupport.Receive(t, c, w.dlq, 2, 60) }) // another consumer
		}
		return nil, nil
	})
	code, out, stderr := w.runYes("export", "--dlq", w.dlq, "--out", file, "--resume", "-o", "json")
	m := regexp.MustCompile(`(?m)^  (pushdlq export .*)$`).FindStringSubmatch(stderr)
	if code != 3 || !strings.Contains(stderr, "not written to "+file+".partial: 2 messages of "+sqsmove.Name(w.dlq)+" in flight after the scan") || m == nil {
		t.Fatalf("exit %d, want 3 saying 2 were in flight, and what to run:\n%s\n%s", code, out, stderr)
	}
	if strings.Contains(m[1], "--delete") {
		t.Errorf("the printed command deletes: %s", m[1])
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("%s was made: %v", file, err)
	}
	if s := exportSummary(t, out); s.File != file+".partial" || s.Resumed != 6 || s.Exported+s.AlreadyInFile != 16 || s.Deleted != 0 {
		t.Errorf("summary %+v: want the partial file, the 10 visible received, none deleted", s)
	}
	words, err := shellword.Split(m[1])
	if err != nil || words[0] != "pushdlq" {
		t.Fatalf("%q: %v", m[1], err)
	}
	w.faults.SetHook(nil)
	once.Do(func() {})          // after the hook's: held is set
	releaseHeld(t, w.dlq, held) // the other consumer is done with them
	code, out, stderr = w.runYes(words[1:]...)
	if code != 0 {
		t.Fatalf("%s: exit %d:\n%s\n%s", m[1], code, out, stderr)
	}
	places := w.places(file)
	testsupport.ExportFileCensus(t, file, map[string][]string{})
	for b := range w.bodies {
		if at := places[b]; len(at) != 2 {
			t.Errorf("%.60s is in %v, want the file once and the DLQ", b, at)
		}
	}
}

// A plain export (not a resume) of a DLQ some of whose messages another
// consumer holds could not read those: it used to exit 0 without a word.
// It commits what it read, says how many were in flight, and exits 3; with
// --delete, what it deleted is what the file holds, and the held ones stay
// in the DLQ.
func TestExportSaysHowManyMessagesWereInFlightElsewhere(t *testing.T) {
	for _, del := range []bool{false, true} {
		t.Run(fmt.Sprintf("delete=%v", del), func(t *testing.T) {
			dlq, bodies := exportBodies(t, "ie", 10)
			held := testsupport.Receive(t, testsupport.SQSClient(t), dlq, 3, 60) // another consumer
			file := filepath.Join(t.TempDir(), "drained.ndjson")
			args := []string{"export", "--dlq", dlq, "--out", file, "-o", "json"}
			if del {
				args = append(args, "--delete", "--yes")
			}
			code, out, stderr := runExportAt(testsupport.SQSEndpoint(t), args...)
			if code != 3 || !strings.Contains(stderr, "not written to "+file+": 3 messages of "+sqsmove.Name(dlq)+" in flight after the scan") {
				t.Fatalf("exit %d, want 3 saying 3 were in flight:\n%s\n%s", code, out, stderr)
			}
			releaseHeld(t, dlq, held)
			s := exportSummary(t, out)
			if want := map[bool]int{true: 7, false: 0}[del]; s.Exported != 7 || s.Deleted != want || s.File != file {
				t.Errorf("summary %+v: want 7 exported to %s, %d deleted", s, file, want)
			}
			places := exportCensus(t, dlq, file)
			inFile := 0
			for _, b := range bodies {
				at := strings.Join(places[b], ",")
				switch {
				case at == "dlq":
				case at == "file" && del, at == "dlq,file" && !del:
					inFile++
				default:
					t.Errorf("%s is in %v", b, places[b])
				}
			}
			if inFile != 7 {
				t.Errorf("%d in the file, want 7", inFile)
			}
		})
	}
}
