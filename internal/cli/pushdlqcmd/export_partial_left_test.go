package pushdlqcmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An export killed after a round of --delete leaves FILE.partial, the only
// copy of what it deleted (a killed run says nothing). Exporting to FILE
// again is refused before the DLQ is read (exit 2), saying what the partial
// file may be, and the file is left as it was.
func TestExportAgainOverALeftPartialFileIsRefusedSayingItMayBeTheOnlyCopy(t *testing.T) {
	w := newLimitWorld(t, 5, 25, 0)
	file := filepath.Join(t.TempDir(), "drained.ndjson")
	left := `{"message_id":"m-1","body":"deleted by the killed export"}` + "\n"
	if err := os.WriteFile(file+".partial", []byte(left), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, del := range []bool{true, false} {
		args := []string{"export", "--dlq", w.dlq, "--out", file, "--yes"}
		if del {
			args = append(args, "--delete")
		}
		code, out, stderr := w.runYes(args...)
		if code != 2 || !strings.Contains(stderr, file+".partial exists") || !strings.Contains(stderr, "only copy") {
			t.Errorf("--delete %v: exit %d, want 2 naming the partial file as maybe the only copy:\n%s\n%s", del, code, out, stderr)
		}
	}
	if n := w.faults.Calls()["ReceiveMessage"]; n != 0 {
		t.Errorf("%d receives: the DLQ was read", n)
	}
	if b, err := os.ReadFile(file + ".partial"); err != nil || string(b) != left {
		t.Errorf("the partial file changed: %q %v", b, err)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("%s was written: %v", file, err)
	}
}
