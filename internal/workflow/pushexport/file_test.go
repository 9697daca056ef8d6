package pushexport

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deadletter/deadletter/internal/sqsmove"
)

// A stopped export's FILE.partial is reopened with its whole lines kept
// (ids known, bytes hashed, counted), its torn last line cut and said,
// and what is appended after goes on the same digest; Commit makes it
// FILE. Nothing of the receipt handle reaches the file.
func TestOpenPartialKeepsWholeLinesCutsATornOneAndAppends(t *testing.T) {
	out := filepath.Join(t.TempDir(), "dlq.ndjson")
	e, err := Create(out, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b\n\"c"} {
		if err := e.Write(&sqsmove.Message{MessageID: id, ReceiptHandle: "secret-handle", Body: "{}"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Sync(); err != nil {
		t.Fatal(err)
	}
	e.Abort()
	whole, _ := os.ReadFile(out + ".partial")
	if bytes.Contains(whole, []byte("secret-handle")) {
		t.Fatalf("the receipt handle reached the file: %s", whole)
	}
	torn := append(append([]byte{}, whole...), `{"message_id":"d","bo`...)
	if err := os.WriteFile(out+".partial", torn, 0o600); err != nil {
		t.Fatal(err)
	}

	var said strings.Builder
	r, err := OpenPartial(out, &said)
	if err != nil {
		t.Fatal(err)
	}
	if r.Resumed() != 2 || !r.Holds("a") || !r.Holds("b\n\"c") || r.Holds("d") || r.Bytes() != int64(len(whole)) {
		t.Fatalf("resumed %d, holds a %v, b %v, d %v, %d bytes (want 2, true, true, false, %d)", r.Resumed(), r.Holds("a"), r.Holds("b\n\"c"), r.Holds("d"), r.Bytes(), len(whole))
	}
	if !strings.Contains(said.String(), "cut the torn last line") {
		t.Errorf("the cut was not said: %q", said.String())
	}
	if err := r.Write(&sqsmove.Message{MessageID: "d", Body: "{}"}); err != nil {
		t.Fatal(err)
	}
	if err := r.Commit(); err != nil {
		t.Fatal(err)
	}
	final, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(final, whole) || bytes.Count(final, []byte("\n")) != 3 {
		t.Fatalf("FILE is not the whole lines plus the appended one:\n%s", final)
	}
	if sum := sha256.Sum256(final); r.Digest() != hex.EncodeToString(sum[:]) {
		t.Errorf("digest %s is not the file's", r.Digest())
	}
	if _, err := os.Stat(out + ".partial"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("FILE.partial is still there after Commit: %v", err)
	}
}

// A line that is not an exported message refuses the resume and leaves
// the file byte for byte; no FILE.partial is os.ErrNotExist.
func TestOpenPartialRefusesAFileThatIsNotAnExport(t *testing.T) {
	out := filepath.Join(t.TempDir(), "dlq.ndjson")
	if _, err := OpenPartial(out, nil); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("no partial file: %v, want os.ErrNotExist", err)
	}
	content := []byte("{\"message_id\":\"a\",\"body\":\"{}\"}\nnot json\n")
	if err := os.WriteFile(out+".partial", content, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := OpenPartial(out, nil)
	var bad *NotAnExportError
	if !errors.As(err, &bad) || bad.Line != 2 {
		t.Fatalf("got %v, want line 2 refused", err)
	}
	if after, _ := os.ReadFile(out + ".partial"); !bytes.Equal(after, content) {
		t.Errorf("the refused file changed: %q", after)
	}
}

// Create never takes over an existing FILE.partial.
func TestCreateRefusesAnExistingPartial(t *testing.T) {
	out := filepath.Join(t.TempDir(), "dlq.ndjson")
	if err := os.WriteFile(out+".partial", []byte("kept\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Create(out, nil); err == nil {
		t.Fatal("Create took over an existing FILE.partial")
	}
	if b, _ := os.ReadFile(out + ".partial"); string(b) != "kept\n" {
		t.Errorf("FILE.partial changed: %q", b)
	}
}

// A last line that is a whole exported message and lacks only its newline
// (taken off by hand, `$(cat …)` or an editor) is kept and ended, never
// cut: the stopped export may have deleted its message from the DLQ, so
// cutting it lost the message while saying it was still in the DLQ.
func TestOpenPartialKeepsAWholeLastLineWithoutItsNewline(t *testing.T) {
	out := filepath.Join(t.TempDir(), "dlq.ndjson")
	e, err := Create(out, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b"} {
		if err := e.Write(&sqsmove.Message{MessageID: id, Body: "{}"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Sync(); err != nil {
		t.Fatal(err)
	}
	e.Abort()
	whole, _ := os.ReadFile(out + ".partial")
	if err := os.WriteFile(out+".partial", bytes.TrimSuffix(whole, []byte("\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	var said strings.Builder
	r, err := OpenPartial(out, &said)
	if err != nil {
		t.Fatal(err)
	}
	if r.Resumed() != 2 || !r.Holds("b") || r.Bytes() != int64(len(whole)) {
		t.Fatalf("resumed %d, holds b %v, %d bytes; want 2, true, %d (the last line kept)", r.Resumed(), r.Holds("b"), r.Bytes(), len(whole))
	}
	if strings.Contains(said.String(), "cut") || !strings.Contains(said.String(), "lacked its newline") {
		t.Errorf("what was said: %q", said.String())
	}
	if err := r.Write(&sqsmove.Message{MessageID: "c", Body: "{}"}); err != nil {
		t.Fatal(err)
	}
	if err := r.Commit(); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(out)
	if lines := strings.Split(strings.TrimSuffix(string(got), "\n"), "\n"); len(lines) != 3 || !strings.HasPrefix(lines[2], `{"message_id":"c"`) {
		t.Fatalf("FILE is not the three lines a, b, c:\n%s", got)
	}
}
