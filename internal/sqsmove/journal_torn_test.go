package sqsmove_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deadletter/deadletter/internal/sqsmove"
)

// Opening a journal to append cuts off a torn last line (and only that):
// a whole journal is left as it is, and a file holding nothing but a torn
// line is emptied; what is appended then reads back.
func TestOpenJournalCutsOnlyATornLastLine(t *testing.T) {
	for name, tc := range map[string]struct{ before, kept string }{
		"whole":      {"{\"event\":\"run\"}\n{\"event\":\"sent\",\"id\":\"a\"}\n", "{\"event\":\"run\"}\n{\"event\":\"sent\",\"id\":\"a\"}\n"},
		"torn":       {"{\"event\":\"run\"}\n{\"event\":\"se", "{\"event\":\"run\"}\n"},
		"only torn":  {"{\"ev", ""},
		"long torn":  {"{\"event\":\"run\"}\n" + `{"event":"held","ids":["` + strings.Repeat("x", 200<<10), "{\"event\":\"run\"}\n"},
		"empty file": {"", ""},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "j.ndjson")
			if err := os.WriteFile(path, []byte(tc.before), 0o600); err != nil {
				t.Fatal(err)
			}
			j, err := sqsmove.OpenJournal(path)
			if err != nil {
				t.Fatal(err)
			}
			j.Write(sqsmove.Event{Event: sqsmove.EvSent, ID: "b"})
			j.Close()
			b, _ := os.ReadFile(path)
			if !strings.HasPrefix(string(b), tc.kept) || strings.Count(string(b[len(tc.kept):]), "\n") != 1 {
				t.Errorf("journal after the append:\n%q", b)
			}
			r, err := sqsmove.ReadJournal(path)
			if err != nil || !r.Moved["b"] {
				t.Errorf("read back: %v %+v", err, r)
			}
		})
	}
}
