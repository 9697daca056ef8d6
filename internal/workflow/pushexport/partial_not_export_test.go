package pushexport

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/deadletter/deadletter/internal/sqsmove"
)

// A FILE.partial that is not an export must be refused and left as it is,
// also when it has no newline at all: its only "line" is then the torn
// last line, and it was cut (truncated to 0 bytes) and the resume went on
// to export the DLQ into it. A torn line of an export is a prefix of an
// exported line ({"message_id":...); anything else is not one.
func TestOpenPartialLeavesAOneLineNonExportAlone(t *testing.T) {
	for _, content := range []string{
		`{"ssh_key":"one line, no newline"}`,
		"plain notes without a trailing newline",
	} {
		out := filepath.Join(t.TempDir(), "notes")
		if err := os.WriteFile(out+".partial", []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		e, err := OpenPartial(out, io.Discard)
		var bad *NotAnExportError
		if !errors.As(err, &bad) {
			if e != nil {
				e.Abort()
			}
			got, _ := os.ReadFile(out + ".partial")
			t.Errorf("%q: OpenPartial = %v, want NotAnExportError; the file now holds %q", content, err, got)
		}
	}
}

// Commit publishes FILE.partial as FILE; it must never replace a FILE
// that exists (a finished export, whose messages were deleted from the
// DLQ): the verb's "FILE already exists" check runs before the lock is
// taken, so a run that passed it may commit after another run finished.
func TestCommitNeverReplacesAnExistingFile(t *testing.T) {
	out := filepath.Join(t.TempDir(), "drained.ndjson")
	first := []byte(`{"message_id":"only-copy","body":"deleted from the DLQ"}` + "\n")
	e, err := Create(out, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, first, 0o600); err != nil { // another run committed meanwhile
		t.Fatal(err)
	}
	if err := e.Write(&sqsmove.Message{MessageID: "other", Body: "x"}); err != nil {
		t.Fatal(err)
	}
	err = e.Commit()
	if got, _ := os.ReadFile(out); !bytes.Equal(got, first) {
		t.Fatalf("Commit (err %v) replaced the existing %s: it held %q, now %q", err, out, first, got)
	}
}
