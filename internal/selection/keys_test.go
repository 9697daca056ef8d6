package selection

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/dla"
)

// Every way an operator names an object (a key, a key relative to the
// archive, an s3:// URL, a local path inside the archive, absolute or
// relative) resolves to the one key.
func TestResolveKeyTakesEveryFormOfAKey(t *testing.T) {
	dir := t.TempDir()
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(cwd, dir)
	if err != nil {
		t.Fatal(err)
	}
	local := archive.Location{Dir: dir, Stack: "demo"}
	layout := dla.Layout{Stack: "demo"}
	full := "demo/dead-letter-archive/sqs/2024-03-02/exec-uuid"
	for _, c := range []struct {
		loc  archive.Location
		in   string
		want string
	}{
		{local, full, full},
		{local, "dead-letter-archive/sqs/2024-03-02/exec-uuid", full},
		{local, "sqs/2024-03-02/exec-uuid", full},
		{local, "failed-sqs/2024-03-02/exec-uuid", "demo/dead-letter-archive/failed-sqs/2024-03-02/exec-uuid"},
		{local, "s3://bucket/" + full, full},
		{local, filepath.Join(dir, filepath.FromSlash(full)), full},
		{local, "./" + filepath.ToSlash(rel) + "/" + full, full},
		{archive.Location{Bucket: "b", Stack: "demo"}, "sqs/2024-03-02/exec-uuid", full},
	} {
		if got := ResolveKey(c.loc, layout, c.in); got != c.want {
			t.Errorf("ResolveKey(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// A URL of another bucket is refused, and a key named twice is kept once.
func TestResolveKeysRefusesAnotherBucketAndKeepsAKeyOnce(t *testing.T) {
	loc, layout := archive.Location{Bucket: "b", Stack: "demo"}, dla.Layout{Stack: "demo"}
	if _, err := ResolveKeys(loc, layout, []string{"s3://other/demo/dead-letter-archive/sqs/2024-03-02/x"}); err == nil {
		t.Error("another bucket's object was taken")
	}
	keys, err := ResolveKeys(loc, layout, []string{"sqs/2024-03-02/x", "s3://b/demo/dead-letter-archive/sqs/2024-03-02/x"})
	if err != nil || len(keys) != 1 {
		t.Errorf("keys %q, %v", keys, err)
	}
}
