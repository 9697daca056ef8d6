package pushdlqcmd

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/shellword"
	"github.com/deadletter/deadletter/internal/sqsmove"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// stoppedExport is a DLQ of n messages behind an in-flight limit proxy,
// and the FILE.partial an export --delete that stopped would have left:
// inFile lines, the first gone of which were deleted (they are no longer
// in the DLQ), and, when torn, half a line of the next message (a kill
// while writing it). ids are the messages in the order of the file.
func stoppedExport(t *testing.T, n, limit, inFile, gone int, torn bool) (w *limitWorld, file string, ids []string) {
	t.Helper()
	c := testsupport.SQSClient(t)
	w = &limitWorld{t: t, bodies: map[string]bool{}}
	w.dlq, w.base = testsupport.NewPushQueues(t, c, "xr", 1)
	var bodies []string
	for i := range n {
		b := `{"action":"push","priority":1,"createdAt":1763107200000,"errorCode":1004,"n":` + strconv.Itoa(i) + `}`
		bodies = append(bodies, b)
		w.bodies[b] = true
	}
	sent := testsupport.SendBodies(t, c, w.dlq, bodies, nil)
	body := map[string]string{}
	for i, id := range sent {
		body[id] = bodies[i]
	}
	for _, m := range testsupport.Receive(t, c, w.dlq, gone, 30) {
		ids = append(ids, aws.ToString(m.MessageId))
		if _, err := c.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(w.dlq), ReceiptHandle: m.ReceiptHandle}); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range sent {
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	var partial []byte
	for i := range inFile + 1 {
		line, err := json.Marshal(&sqsmove.Message{MessageID: ids[i], Body: body[ids[i]], MessageAttributes: map[string]sqsmove.Attribute{}, Attributes: map[string]string{}})
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case i < inFile:
			partial = append(partial, append(line, '\n')...)
		case torn:
			partial = append(partial, line[:len(line)/2]...)
		}
	}
	file = filepath.Join(t.TempDir(), "drained.ndjson")
	if err := os.WriteFile(file+".partial", partial, 0o600); err != nil {
		t.Fatal(err)
	}
	w.limit = testsupport.NewInFlightLimitProxy(t, testsupport.SQSEndpoint(t), limit)
	w.faults = testsupport.NewProxy(t, w.limit.URL)
	return w, file, ids
}

// inOnePlace checks that every message of w is in exactly one place, the
// file (once) or the DLQ, and returns how many are in the file.
func inOnePlace(t *testing.T, w *limitWorld, file string) int {
	t.Helper()
	n := 0
	for b, at := range w.places(file) {
		if len(at) != 1 {
			t.Errorf("a message is in %v, want one place: %.80s", at, b)
		} else if at[0] == "file" {
			n++
		}
	}
	return n
}

// A resumed export --delete (--resume) reads FILE.partial, cuts its torn
// last line, waits for nothing, and reads the DLQ on past the in-flight
// limit: a message received again that is a line of the file is deleted
// and not written again, any other (the torn line's too) is appended and
// deleted; the lines no longer in the DLQ stay. FILE then holds every
// message once, the DLQ none, and the summary's counts, size and sha256
// are the whole file's.
func TestResumedExportDeletesWhatTheFileHoldsAndAppendsTheRest(t *testing.T) {
	const n, limit, inFile, gone = 40, 15, 20, 8
	w, file, ids := stoppedExport(t, n, limit, inFile, gone, true)
	code, out, stderr := w.runYes("export", "--dlq", w.dlq, "--out", file, "--delete", "--resume", "--yes", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d, want 0:\n%s\n%s", code, out, stderr)
	}
	s := exportSummary(t, out)
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	digest := sha256.Sum256(data)
	if s.Resumed != inFile || s.AlreadyInFile != inFile-gone || s.Exported != n || s.Deleted != n-gone || s.DeleteFailed != 0 ||
		s.Bytes != int64(len(data)) || s.SHA256 == nil || *s.SHA256 != hex.EncodeToString(digest[:]) {
		t.Errorf("summary %+v: want %d resumed, %d already in the file, %d exported, %d deleted, the file's size and digest", s, inFile, inFile-gone, n, n-gone)
	}
	if !strings.Contains(stderr, "cut the torn last line") || rounds(stderr) < 2 {
		t.Errorf("no word of the torn line, or no rounds:\n%s", stderr)
	}
	if _, err := os.Stat(file + ".partial"); !os.IsNotExist(err) {
		t.Errorf("the partial file is left: %v", err)
	}
	lines := testsupport.ReadLines(t, file)
	for i, l := range lines {
		if i < inFile && gjson.Get(l, "message_id").Str != ids[i] {
			t.Errorf("line %d is %s, want the partial file's %s", i+1, gjson.Get(l, "message_id").Str, ids[i])
		}
	}
	if got := inOnePlace(t, w, file); got != n || len(lines) != n {
		t.Errorf("%d messages in the file (%d lines), want all %d", got, len(lines), n)
	}
}

// A resume waits for the messages of the DLQ in flight (the stopped
// export's hold runs out after its visibility timeout): a line of the file
// still in the DLQ can be deleted only once received again. When they are
// still in flight after --wait-held, it exits 1 having received nothing
// and left FILE.partial as it was, and says to run it again (the command,
// with --wait-held); run once they are visible, it finishes the export.
func TestResumeWaitsForMessagesInFlightAndStopsAfterWaitHeld(t *testing.T) {
	w, file, _ := stoppedExport(t, 12, 100, 6, 2, false)
	c := testsupport.SQSClient(t)
	held := testsupport.Receive(t, c, w.dlq, 3, 4) // as the killed export's hold, for 4 s
	before, _ := os.ReadFile(file + ".partial")
	code, out, stderr := w.runYes("export", "--dlq", w.dlq, "--out", file, "--delete", "--resume", "--yes", "--wait-held", "1s")
	if code != 1 || !strings.Contains(stderr, "still in flight after --wait-held 1s") || !strings.Contains(stderr, "--resume --yes --visibility-timeout 30s --wait-held 1s") {
		t.Fatalf("exit %d, want 1 saying to run again:\n%s\n%s", code, out, stderr)
	}
	if n := w.faults.Calls()["ReceiveMessage"]; n != 0 {
		t.Errorf("%d receives while messages were in flight", n)
	}
	if after, _ := os.ReadFile(file + ".partial"); string(after) != string(before) {
		t.Error("the partial file changed")
	}
	start := time.Now()
	code, out, stderr = w.runYes("export", "--dlq", w.dlq, "--out", file, "--delete", "--resume", "--yes", "-o", "json")
	if code != 0 || !strings.Contains(stderr, "waiting for them") {
		t.Fatalf("exit %d, want 0 after waiting:\n%s\n%s", code, out, stderr)
	}
	if s := exportSummary(t, out); s.AlreadyInFile != 4 || s.Exported != 12 || time.Since(start) < time.Second {
		t.Errorf("summary %+v after %s: want the 4 lines still in the DLQ received again, 12 exported", s, time.Since(start))
	}
	if got := inOnePlace(t, w, file); got != 12 {
		t.Errorf("%d in the file, want 12 (%d were held)", got, len(held))
	}
}

// A message of the DLQ in flight elsewhere after the resume's scan
// (another consumer received it meanwhile) may be a line of the file that
// the scan did not see: FILE.partial is not made FILE, the run exits 3 and
// prints the command; run as printed once the message is visible again,
// that command finishes the export.
func TestResumeLeavesThePartialFileWhileAMessageIsInFlightElsewhere(t *testing.T) {
	w, file, _ := stoppedExport(t, 12, 100, 6, 2, false)
	c := testsupport.SQSClient(t)
	var once sync.Once
	w.faults.SetHook(func(op string, _ []byte) ([]byte, *testsupport.Reply) {
		if op == "ReceiveMessage" {
			once.Do(func() { testsupport.Receive(t, c, w.dlq, 1, 3) }) // another consumer, for 3 s
		}
		return nil, nil
	})
	code, out, stderr := w.runYes("export", "--dlq", w.dlq, "--out", file, "--delete", "--resume", "--yes", "-o", "json")
	m := regexp.MustCompile(`(?m)^  (pushdlq export .*)$`).FindStringSubmatch(stderr)
	if code != 3 || !strings.Contains(stderr, "in flight after the scan that this run does not hold") || m == nil {
		t.Fatalf("exit %d, want 3 saying why and what to run:\n%s\n%s", code, out, stderr)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("%s was committed: %v", file, err)
	}
	// 9 of the 10 messages in the DLQ received: those already in the file
	// and those appended, all deleted.
	if s := exportSummary(t, out); s.File != file+".partial" || s.Resumed != 6 || s.Exported-s.Resumed+s.AlreadyInFile != 9 || s.Deleted != 9 {
		t.Errorf("summary %+v: want the partial file, 9 received and deleted", s)
	}
	words, err := shellword.Split(m[1])
	if err != nil || words[0] != "pushdlq" {
		t.Fatalf("%q: %v", m[1], err)
	}
	w.faults.SetHook(nil)
	code, out, stderr = w.runYes(words[1:]...) // it waits for the other consumer's hold to run out
	if code != 0 {
		t.Fatalf("%s: exit %d:\n%s\n%s", m[1], code, out, stderr)
	}
	if got := inOnePlace(t, w, file); got != 12 {
		t.Errorf("%d in the file, want 12", got)
	}
}

// Two runs never write one partial file: a resume while another export of
// FILE runs (its lock FILE.partial.lock is taken) is refused (exit 2)
// before the DLQ is read, and the partial file is left as it was.
func TestResumeWhileAnotherExportWritesThePartialFileIsRefused(t *testing.T) {
	w, file, _ := stoppedExport(t, 4, 100, 2, 0, false)
	unlock, err := exportLock(file)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	before, _ := os.ReadFile(file + ".partial")
	code, out, stderr := w.runYes("export", "--dlq", w.dlq, "--out", file, "--delete", "--resume", "--yes")
	if code != 2 || !strings.Contains(stderr, "being written by another export") {
		t.Errorf("exit %d, want 2 naming the lock:\n%s\n%s", code, out, stderr)
	}
	if n := w.faults.Calls()["GetQueueAttributes"] + w.faults.Calls()["ReceiveMessage"]; n != 0 {
		t.Errorf("%d calls to SQS", n)
	}
	if after, _ := os.ReadFile(file + ".partial"); string(after) != string(before) {
		t.Error("the partial file changed")
	}
}

// The refusal of an export over a left FILE.partial prints the command
// that finishes it, quoted for the shell, with the invocation's DLQ, file
// and AWS flags (--yes only when given); without --delete it prints both
// (the stopped export may have run with or without it). Nothing is read.
func TestRefusalOverALeftPartialFilePrintsTheCommandsThatFinishIt(t *testing.T) {
	w := newLimitWorld(t, 1, 25, 0)
	file := filepath.Join(t.TempDir(), `it's $HOME.ndjson`)
	if err := os.WriteFile(file+".partial", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	awsFlags := []string{"--region", "eu-west-1", "--endpoint-url", "http://127.0.0.1:1/a b", "--profile", "x y"}
	want := func(del, yes bool) []string {
		w := []string{"pushdlq", "export", "--dlq", "my dlq", "--out", file}
		if del {
			w = append(w, "--delete")
		}
		w = append(w, "--resume")
		if yes {
			w = append(w, "--yes") // as given: without, it asks
		}
		return append(w, "--visibility-timeout", "30s", "--profile", "x y", "--region", "eu-west-1", "--endpoint-url", "http://127.0.0.1:1/a b")
	}
	for _, tc := range []struct {
		args []string
		want [][]string
	}{
		{[]string{"--delete", "--yes"}, [][]string{want(true, true)}},
		{nil, [][]string{want(true, false), want(false, false)}},
	} {
		args := append(append([]string{"export", "--dlq", "my dlq", "--out", file}, tc.args...), awsFlags...)
		code, _, stderr := w.runYes(args...)
		var got [][]string
		for _, m := range regexp.MustCompile(`(?m)^  (pushdlq export .*)$`).FindAllStringSubmatch(stderr, -1) {
			words, err := shellword.Split(m[1])
			if err != nil {
				t.Fatalf("%q: %v", m[1], err)
			}
			got = append(got, words)
		}
		if code != 2 || !strings.Contains(stderr, "only copy") || !slices.EqualFunc(got, tc.want, slices.Equal) {
			t.Errorf("%v: exit %d, commands %q, want 2 and %q:\n%s", tc.args, code, got, tc.want, stderr)
		}
	}
	if n := w.faults.Calls()["ReceiveMessage"]; n != 0 {
		t.Errorf("%d receives", n)
	}
}
