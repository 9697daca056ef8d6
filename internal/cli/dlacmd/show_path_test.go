package dlacmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deadletter/deadletter/internal/cli/cmdutil"
)

// copySample copies one object of the sample archive into a local archive
// under dir (stack demo) and returns its key.
func copySample(t *testing.T, dir, rel string) string {
	t.Helper()
	body, err := os.ReadFile(filepath.Join(sampleArchive, "dead-letter-archive", filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	key := "demo/dead-letter-archive/" + rel
	p := filepath.Join(dir, filepath.FromSlash(key))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, body, 0o644); err != nil {
		t.Fatal(err)
	}
	return key
}

// `dla show PATH` takes the path of a file inside a local archive relative
// to the current directory, not only an absolute or ./ path.
func TestShowRelativePath(t *testing.T) {
	tmp := t.TempDir()
	name := "fc11c688-08b0-490f-a8c2-27af55e963d9-2c06e409-dae1-489b-84eb-e698da28bb8e"
	key := copySample(t, filepath.Join(tmp, "arch"), "sqs/2024-03-02/"+name)
	if err := os.WriteFile(filepath.Join(tmp, "outside.json"), []byte(`{}`), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(tmp)
	for _, c := range []struct{ name, dir, archive, arg string }{
		{"from above the archive", tmp, "arch/demo", "arch/" + key},
		{"from the date folder", filepath.Join(tmp, "arch", filepath.FromSlash(key), ".."), "../../..", name},
		{"from the stack folder", filepath.Join(tmp, "arch", "demo"), ".", "dead-letter-archive/sqs/2024-03-02/" + name},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Chdir(c.dir)
			r := run(t, false, nil, "", "show", "--archive", c.archive, c.arg)
			if r.code != 0 || !strings.HasPrefix(r.stdout, key+"\n") || !strings.Contains(r.stdout, "message id         0ed9b15f-f8dd-4ce1-91fa-c57676d5ea18") {
				t.Fatalf("show %s: exit %d\nstdout %.300s\nstderr %s", c.arg, r.code, r.stdout, r.stderr)
			}
		})
	}
	t.Run("a file outside the archive is not read", func(t *testing.T) {
		t.Chdir(tmp)
		r := run(t, false, nil, "", "show", "--archive", "arch/demo", "outside.json")
		if r.code != cmdutil.ExitPartial || r.stdout != "" || r.stderr != "dla: unreadable outside.json: refused: it is outside demo/dead-letter-archive/\n" {
			t.Fatalf("exit %d\nstdout %q\nstderr %q", r.code, r.stdout, r.stderr)
		}
	})
}

// The error for a missing key names the key once.
func TestShowMissingKeyNamedOnce(t *testing.T) {
	r := run(t, false, nil, "", "show", "--archive", sampleArchive, "sqs/2024-03-04/missing")
	want := "dla: unreadable demo/dead-letter-archive/sqs/2024-03-04/missing: no such key\n"
	if r.code != cmdutil.ExitPartial || r.stderr != want {
		t.Fatalf("exit %d, stderr %q, want %q", r.code, r.stderr, want)
	}
}

// Issue 38 item 9: dla show with no key got cobra's "requires at least 1
// arg(s), only received 0"; it now says what it needs (exit 2).
func TestShowWithoutAKeySaysWhatItNeeds(t *testing.T) {
	r := run(t, false, nil, "", "show", "--archive", sampleArchive)
	if r.code != 2 || !strings.Contains(r.stderr, "show needs an archive key, e.g. dla show sqs/2024-03-02/") ||
		!strings.Contains(r.stderr, "dla show -") || strings.Contains(r.stderr, "arg(s)") {
		t.Errorf("exit %d: %s", r.code, r.stderr)
	}
}
