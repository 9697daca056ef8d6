package pushdlqcmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/sqsmove"
	"github.com/deadletter/deadletter/internal/testsupport"
	"github.com/deadletter/deadletter/internal/workflow/pushexport"
)

// writeExportLines writes the partial file (and FILE.partial.source) an
// export of queue that stopped would leave holding these messages, and
// returns its text.
func writeExportLines(t *testing.T, out, queue string, ids, bodies []string) string {
	t.Helper()
	e, err := pushexport.Create(out, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.RecordSource(queue); err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		if err := e.Write(&sqsmove.Message{MessageID: id, Body: bodies[i], MessageAttributes: map[string]sqsmove.Attribute{}, Attributes: map[string]string{}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Sync(); err != nil {
		t.Fatal(err)
	}
	e.Abort()
	b, err := os.ReadFile(out + ".partial")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A FILE.partial edited by hand, one message id on two lines or a line of
// another queue's export pasted in, was resumed with exit 0 and "the DLQ
// holds none of them", the census then finding a message twice in FILE or
// one that was never this DLQ's. The resume is refused (exit 2) naming the
// file, the line and what is wrong, before anything is received: the DLQ
// holds every message it held, the other queue its own, the file is as it
// was.
func TestResumeOfAnEditedPartialFileIsRefusedNamingTheLine(t *testing.T) {
	c := testsupport.SQSClient(t)
	other := testsupport.NewQueue(t, c, "eo", false)
	otherIDs := testsupport.SendBodies(t, c, other, []string{`{"other":1}`}, nil)
	stray := writeExportLines(t, filepath.Join(t.TempDir(), "other.ndjson"), other, otherIDs, []string{`{"other":1}`})
	for _, tc := range []struct {
		name string
		add  func(lines string) string
		want string
	}{
		{"a repeated id", func(l string) string { return l + strings.SplitAfter(l, "\n")[1] }, "its message id %s is line 2's too"},
		{"a line of another queue", func(l string) string { return l + stray }, "it records the queue " + sqsmove.Name(other)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dlq, bodies := exportBodies(t, "ed", 6)
			got := testsupport.Receive(t, c, dlq, 3, 1) // as the stopped export's scan; visible again after 1 s
			var lineIDs, lineBodies []string
			for _, m := range got {
				lineIDs, lineBodies = append(lineIDs, *m.MessageId), append(lineBodies, *m.Body)
			}
			file := filepath.Join(t.TempDir(), "drained.ndjson")
			edited := tc.add(writeExportLines(t, file, dlq, lineIDs, lineBodies))
			if err := os.WriteFile(file+".partial", []byte(edited), 0o600); err != nil {
				t.Fatal(err)
			}
			proxy := testsupport.NewProxy(t, testsupport.SQSEndpoint(t))
			code, out, stderr := runExportAt(proxy.URL, "export", "--dlq", dlq, "--out", file, "--delete", "--resume", "--yes")
			want := tc.want
			if strings.Contains(want, "%s") {
				want = strings.Replace(want, "%s", lineIDs[1], 1)
			}
			if code != 2 || !strings.Contains(stderr, "line 4 of "+file+".partial is not a line of this export") || !strings.Contains(stderr, want) {
				t.Fatalf("exit %d, want 2 naming line 4 of the file and saying %q:\n%s\n%s", code, want, out, stderr)
			}
			if n := proxy.Calls()["ReceiveMessage"] + proxy.Calls()["DeleteMessageBatch"]; n != 0 {
				t.Errorf("%d receives and deletes", n)
			}
			if after, _ := os.ReadFile(file + ".partial"); string(after) != edited {
				t.Error("the partial file changed")
			}
			places := map[string][]string{}
			for _, m := range testsupport.Drain(t, c, dlq, 3*time.Second) {
				places[*m.Body] = append(places[*m.Body], "dlq")
			}
			for _, b := range bodies {
				if at := places[b]; len(at) != 1 {
					t.Errorf("%s is in %v, want in the DLQ (nothing deleted)", b, at)
				}
			}
		})
	}
	if n := len(testsupport.Drain(t, c, other, time.Second)); n != 1 {
		t.Errorf("%d messages in the other queue, want its 1", n)
	}
}
