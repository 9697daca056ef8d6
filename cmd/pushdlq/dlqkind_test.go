package main_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/deadletter/deadletter/internal/sqsmove"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// A FIFO DLQ is refused by every command that reads it, before anything
// is received (the scan would stop at the first message of each group):
// exit 2, saying why.
func TestFIFODLQIsRefused(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 1)
	fifo := testsupport.CreateQueue(t, w.c, "e2e"+testsupport.RandomHex(3)+"-push-dlq.fifo", map[string]string{"FifoQueue": "true"})
	for _, args := range [][]string{
		{"replay", "--dlq", fifo, "--queue-base-url", w.base, "--window", winStart + "/" + winEnd, "--codes", "1004", "--yes"},
		{"inspect", "--dlq", fifo},
		{"export", "--dlq", fifo, "--out", "-"},
	} {
		_, stderr, code := w.run(nil, "", args...)
		if code != 2 || !strings.Contains(stderr, "is a FIFO queue; the push DLQ is a standard queue") || strings.Contains(stderr, "Scanned") {
			t.Errorf("%s: exit %d, want 2 refusing the FIFO queue: %s", args[0], code, stderr)
		}
	}
}

// A DLQ with its own redrive policy: each receive counts toward its
// maxReceiveCount, so reading it can move messages out of it. inspect,
// export and replay refuse it (exit 2, saying what would happen) and
// receive nothing; with --allow-redrive they read it, with a warning.
func TestDLQWithItsOwnRedrivePolicyNeedsAllowRedrive(t *testing.T) {
	t.Parallel()
	w := seededWorld(t, 16)
	other := testsupport.CreateQueue(t, w.c, "e2e"+testsupport.RandomHex(3)+"-dlq-dlq", nil)
	q, err := sqsmove.Describe(context.Background(), w.c, other)
	if err != nil {
		t.Fatal(err)
	}
	policy := fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"2"}`, q.ARN)
	if _, err := w.c.SetQueueAttributes(context.Background(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(w.dlq), Attributes: map[string]string{"RedrivePolicy": policy}}); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		w.replayArgs("--yes"),
		{"inspect", "--dlq", w.dlq},
		{"export", "--dlq", w.dlq, "--out", "-"},
	} {
		_, stderr, code := w.run(nil, "", args...)
		if code != 2 || !strings.Contains(stderr, "has its own redrive policy (maxReceiveCount 2, to "+q.ARN+"): every receive by pushdlq counts toward it") || !strings.Contains(stderr, "--allow-redrive") {
			t.Errorf("%s: exit %d, want 2 explaining the redrive policy: %s", args[0], code, stderr)
		}
	}
	d, err := sqsmove.Describe(context.Background(), w.c, w.dlq)
	if err != nil || d.Visible != 16 || d.InFlight != 0 {
		t.Fatalf("the refused commands touched the DLQ: %+v %v", d, err)
	}
	out, stderr, code := w.run(nil, "", "inspect", "--dlq", w.dlq, "--allow-redrive")
	if code != 0 || !strings.Contains(stderr, "warning: ") || !strings.Contains(out, "16") {
		t.Errorf("inspect --allow-redrive: exit %d:\n%s\n%s", code, out, stderr)
	}
}

// An export file that cannot be read is an error naming the line, with
// no summary on stdout (nothing ran); one with a byte-order mark and CRLF
// line ends is read as written.
func TestFromFileBadLineAndByteOrderMark(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 1)
	dir := t.TempDir()
	line := `{"message_id":"m1","body":"{\"priority\":1,\"createdAt\":` + fmt.Sprint(inWindow) + `,\"errorCode\":1004,\"errorMessage\":\"x\"}","message_attributes":{}}`
	bad := filepath.Join(dir, "bad.ndjson")
	bom := filepath.Join(dir, "bom.ndjson")
	if err := os.WriteFile(bad, []byte(line+"\nnot json\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bom, []byte("\xef\xbb\xbf"+line+"\r\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	args := func(file string) []string {
		return []string{"replay", "--from-file", file, "--queue-base-url", w.base, "--window", winStart + "/" + winEnd, "--codes", "*", "--dry-run"}
	}
	stdout, stderr, code := w.run(nil, "", args(bad)...)
	if code != 1 || stdout != "" || !strings.Contains(stderr, "bad.ndjson line 2: not a message") {
		t.Errorf("bad line: exit %d, stdout %q, stderr %s", code, stdout, stderr)
	}
	stdout, stderr, code = w.run(nil, "", args(bom)...)
	if code != 0 || !strings.Contains(stdout, "scanned             1") {
		t.Errorf("byte-order mark: exit %d:\n%s\n%s", code, stdout, stderr)
	}
}
