package archive_test

import (
	"context"
	"crypto/md5"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/archive"
)

func TestCheckKey(t *testing.T) {
	root := "demo/dead-letter-archive/"
	for _, ok := range []string{
		root + "sqs/2024-03-01/x",
		root + "sqs/2024-03-01/x\nbackups/db-dump.sql", // a newline is a valid byte of a key
		root + "failed-sqs/2024-03-01/exec a+b:ü=1&x-uuid",
		root + "sqs/legacy-1.json",
		root + "sqs/2024-03-01/..x", // not a ".." segment
	} {
		if err := archive.CheckKey(root, ok); err != nil {
			t.Errorf("CheckKey(%q) = %v, want nil", ok, err)
		}
	}
	for _, bad := range []string{
		"notes.txt",
		"backups/db-dump.sql",
		"demo/dead-letter-archive",
		root,
		"other/dead-letter-archive/sqs/2024-03-01/x",
		root + "sqs/../../../other/config.txt",
		root + "sqs/2024-03-01/../../../../etc/passwd",
		root + "sqs/./2024-03-01/x",
		root + "sqs//2024-03-01/x",
		root + "/sqs/x",
		root + `sqs\..\..\x`,
		root + "sqs/2024-03-01/x\x00y",
	} {
		if err := archive.CheckKey(root, bad); !errors.Is(err, archive.ErrOutside) {
			t.Errorf("CheckKey(%q) = %v, want ErrOutside", bad, err)
		}
	}
}

// TestContainedStoreRefusesEveryVerb: each method of a contained store
// refuses a key outside the root, and the object there is left untouched.
func TestContainedStoreRefusesEveryVerb(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	raw, err := archive.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	inside := "demo/dead-letter-archive/sqs/2024-03-01/x"
	outside := "notes.txt"
	for _, k := range []string{inside, outside, "demo/other.txt"} {
		if err := raw.Put(ctx, k, []byte("{}")); err != nil {
			t.Fatal(err)
		}
	}
	s := archive.Contain(raw, "demo/dead-letter-archive/")
	refused := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, archive.ErrOutside) {
			t.Errorf("%s: err = %v, want ErrOutside", what, err)
		}
	}
	_, err = s.Get(ctx, outside)
	refused("get", err)
	_, err = s.GetInto(ctx, outside, nil)
	refused("get into", err)
	_, err = s.Stat(ctx, outside)
	refused("stat", err)
	refused("put", s.Put(ctx, outside, []byte("x")))
	refused("put new", s.PutNew(ctx, "demo/copied", []byte("x"), ""))
	refused("delete", s.Delete(ctx, outside))
	// The digest is right: only containment can refuse it.
	refused("delete if digest", archive.DeleteChecked(ctx, s, outside, md5.Sum([]byte("{}"))))
	refused("remove if digest", archive.DeleteFast(ctx, s, outside, md5.Sum([]byte("{}"))))
	refused("list", s.List(ctx, "demo/", false, func(archive.Entry) error { return nil }))
	failed, err := s.DeleteMany(ctx, []string{outside, inside})
	if err != nil || len(failed) != 1 || !errors.Is(failed[outside], archive.ErrOutside) {
		t.Errorf("delete many = %v, %v; want only %s refused", failed, err, outside)
	}
	_, err = archive.Move(ctx, s, "demo/other.txt", "demo/dead-letter-archive/failed-sqs/2024-03-01/other.txt")
	refused("move", err)
	for _, k := range []string{outside, "demo/other.txt"} {
		if b, err := raw.Get(ctx, k); err != nil || string(b) != "{}" {
			t.Errorf("%s touched: %q, %v", k, b, err)
		}
	}
	if _, err := raw.Get(ctx, inside); !errors.Is(err, archive.ErrNotFound) {
		t.Errorf("the key inside the root was not deleted by DeleteMany: %v", err)
	}
}

// TestLocalNeverFollowsLinks: a link to a file outside, a link to a file
// inside and a linked folder are all listed, and all refused when read,
// copied or deleted; nothing outside is created, changed or removed.
func TestLocalNeverFollowsLinks(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	outsideDir := t.TempDir()
	secret := filepath.Join(outsideDir, "passwd")
	if err := os.WriteFile(secret, []byte("root:x:0:0"), 0o600); err != nil {
		t.Fatal(err)
	}
	day := filepath.Join(dir, "demo/dead-letter-archive/sqs/2024-03-01")
	if err := os.MkdirAll(day, 0o755); err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(day, "real"), []byte("{}"), 0o644))
	must(os.Symlink(secret, filepath.Join(day, "to-passwd")))
	must(os.Symlink("real", filepath.Join(day, "to-real")))
	must(os.Symlink(outsideDir, filepath.Join(dir, "demo/dead-letter-archive/sqs/2024-03-02")))
	must(os.Symlink(outsideDir, filepath.Join(dir, "demo/dead-letter-archive/failed-sqs")))

	raw, err := archive.NewLocal(dir)
	must(err)
	s := archive.Contain(raw, "demo/dead-letter-archive/")
	var listed []string
	must(s.List(ctx, "demo/dead-letter-archive/sqs/2024-03-01/", false, func(e archive.Entry) error {
		listed = append(listed, e.Key)
		return nil
	}))
	if len(listed) != 3 {
		t.Errorf("listed %q: want the file and both links", listed)
	}
	root := "demo/dead-letter-archive/sqs/"
	for _, k := range []string{root + "2024-03-01/to-passwd", root + "2024-03-01/to-real", root + "2024-03-02/passwd"} {
		if b, err := s.Get(ctx, k); !errors.Is(err, archive.ErrSymlink) {
			t.Errorf("get %s = %q, %v; want ErrSymlink", k, b, err)
		}
		if _, err := s.Stat(ctx, k); !errors.Is(err, archive.ErrSymlink) {
			t.Errorf("stat %s: %v; want ErrSymlink", k, err)
		}
		if err := s.Delete(ctx, k); !errors.Is(err, archive.ErrSymlink) {
			t.Errorf("delete %s: %v; want ErrSymlink", k, err)
		}
	}
	if err := s.List(ctx, root+"2024-03-02/", false, func(e archive.Entry) error {
		t.Errorf("listed %s through a linked folder", e.Key)
		return nil
	}); !errors.Is(err, archive.ErrSymlink) {
		t.Errorf("listing a linked folder: %v; want ErrSymlink", err)
	}
	_, err = archive.Move(ctx, s, root+"2024-03-01/real", "demo/dead-letter-archive/failed-sqs/2024-03-01/real")
	if !errors.Is(err, archive.ErrSymlink) {
		t.Errorf("move into a linked failed-sqs: %v; want ErrSymlink", err)
	}
	entries, _ := os.ReadDir(outsideDir)
	if len(entries) != 1 {
		t.Errorf("the folder outside now holds %d entries, want only passwd", len(entries))
	}
	if b, _ := os.ReadFile(secret); string(b) != "root:x:0:0" {
		t.Errorf("the file outside changed: %q", b)
	}
	if b, err := s.Get(ctx, root+"2024-03-01/real"); err != nil || string(b) != "{}" {
		t.Errorf("the real file: %q, %v", b, err)
	}
}

func BenchmarkCheckKey(b *testing.B) {
	key := "demo/dead-letter-archive/sqs/2024-03-01/3628153e-dd58-47bd-b39f-af16f9200ecd-df1226eb-f1f1-4c48-868e-edd7f4293cb6"
	for b.Loop() {
		if err := archive.CheckKey("demo/dead-letter-archive/", key); err != nil {
			b.Fatal(err)
		}
	}
}

// TestLocalRemovesStaleTemporaryFiles: a temporary file left by a killed
// move does not keep its date folder forever once the folder is otherwise
// empty; a fresh one (a move in progress) is left alone.
func TestLocalRemovesStaleTemporaryFiles(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := archive.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	day := filepath.Join(dir, "demo/dead-letter-archive/sqs/2024-03-01")
	for _, k := range []string{"demo/dead-letter-archive/sqs/2024-03-01/x", "demo/dead-letter-archive/sqs/2024-03-02/y"} {
		if err := s.Put(ctx, k, []byte("{}")); err != nil {
			t.Fatal(err)
		}
	}
	stale := filepath.Join(day, ".dla-tmp-0123456789abcdef")
	if err := os.WriteFile(stale, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "demo/dead-letter-archive/sqs/2024-03-01/x"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(day); !os.IsNotExist(err) {
		t.Errorf("the date folder with only a stale temporary file left is still there: %v", err)
	}
	fresh := filepath.Join(dir, "demo/dead-letter-archive/sqs/2024-03-02/.dla-tmp-fedcba9876543210")
	if err := os.WriteFile(fresh, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "demo/dead-letter-archive/sqs/2024-03-02/y"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("a fresh temporary file (a write in progress) was removed: %v", err)
	}
}
