package pushexport

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deadletter/deadletter/internal/sqsmove"
)

const (
	queueA = "http://127.0.0.1:1/000000000000/push-dlq"
	queueB = "http://127.0.0.1:1/000000000000/other-dlq"
)

// exportLines is the partial file an export of queue writes for ids (and
// its FILE.partial.source, when source).
func exportLines(t *testing.T, out, queue string, source bool, ids ...string) string {
	t.Helper()
	e, err := Create(out, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.RecordSource(queue); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if err := e.Write(&sqsmove.Message{MessageID: id, Body: `{"id":"` + id + `"}`}); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Sync(); err != nil {
		t.Fatal(err)
	}
	e.Abort()
	if !source {
		os.Remove(sourcePath(out))
	}
	b, err := os.ReadFile(out + ".partial")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Each exported line records the queue it was read from, and a resumed
// file's appended lines record it too.
func TestEachExportedLineRecordsItsQueue(t *testing.T) {
	out := filepath.Join(t.TempDir(), "drained.ndjson")
	text := exportLines(t, out, queueA, true, "a")
	if !strings.Contains(text, `"queue":"`+queueA+`"`) {
		t.Fatalf("the line does not record its queue: %s", text)
	}
	e, err := OpenPartial(out, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if e.Source() != queueA {
		t.Errorf("Source %q, want %q", e.Source(), queueA)
	}
	if err := e.Write(&sqsmove.Message{MessageID: "b", Body: "{}"}); err != nil {
		t.Fatal(err)
	}
	e.Abort()
	b, _ := os.ReadFile(out + ".partial")
	if n := strings.Count(string(b), `"queue":"`+queueA+`"`); n != 2 {
		t.Errorf("%d lines record %s, want 2:\n%s", n, queueA, b)
	}
}

// A FILE.partial edited by hand is not one export's: a message id on two
// lines (an export writes each message once), or a line that records
// another queue than FILE.partial.source (or, without it, than the first
// line that records one). It was resumed as if whole (exit 0, "the DLQ
// holds none of them"); now OpenPartial refuses it naming the line and
// what is wrong, and leaves the file as it is.
func TestOpenPartialRefusesARepeatedIdOrALineOfAnotherQueue(t *testing.T) {
	dir := t.TempDir()
	stray := exportLines(t, filepath.Join(dir, "other.ndjson"), queueB, true, "z")
	for _, tc := range []struct {
		name   string
		source bool
		extra  func(lines string) string
		line   int
		want   []string
	}{
		{"a repeated id", true, func(l string) string { return l + strings.SplitAfter(l, "\n")[0] },
			3, []string{"its message id a is line 1's too"}},
		{"a line of another queue", true, func(l string) string { return l + stray },
			3, []string{"records the queue other-dlq", "this export reads push-dlq", "drained.ndjson.partial.source records " + queueA}},
		{"a line of another queue, no source file", false, func(l string) string { return l + stray },
			3, []string{"records the queue other-dlq", "this export reads push-dlq", "line 1 records " + queueA}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "drained.ndjson")
			edited := tc.extra(exportLines(t, out, queueA, tc.source, "a", "b"))
			if err := os.WriteFile(out+".partial", []byte(edited), 0o600); err != nil {
				t.Fatal(err)
			}
			e, err := OpenPartial(out, io.Discard)
			var bad *NotAnExportError
			if !errors.As(err, &bad) || bad.Line != tc.line {
				if e != nil {
					e.Abort()
				}
				t.Fatalf("OpenPartial = %v, want line %d refused", err, tc.line)
			}
			msg := err.Error()
			for _, w := range append(tc.want, "line 3 of "+out+".partial") {
				if !strings.Contains(msg, w) {
					t.Errorf("%q does not say %q", msg, w)
				}
			}
			if after, _ := os.ReadFile(out + ".partial"); string(after) != edited {
				t.Errorf("the file changed:\n%s", after)
			}
		})
	}
}
