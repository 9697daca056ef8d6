package archive_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/archive"
)

// TestLocalQuickReadsMatchTheLongWay: every kind of entry a local archive
// can hold reads back with the same bytes and the same error text whether
// GetInto takes its short way (one openat relative to the folder) or the
// long one (lstat, open by path, identity check); and on Linux the short
// way really reads the regular files and leaves everything else alone.
func TestLocalQuickReadsMatchTheLongWay(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "secret")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(outside, []byte("secret"), 0o600))
	day := filepath.Join(dir, "demo/dead-letter-archive/sqs/2024-03-01")
	must(os.MkdirAll(filepath.Join(day, "sub"), 0o755))
	big := bytes.Repeat([]byte(`{"a":"b"}`), 300) // larger than the buffer it is read into
	must(os.WriteFile(filepath.Join(day, "small"), []byte(`{"x":1}`), 0o644))
	must(os.WriteFile(filepath.Join(day, "big"), big, 0o644))
	must(os.WriteFile(filepath.Join(day, "empty"), nil, 0o644))
	must(os.WriteFile(filepath.Join(day, "huge"), bytes.Repeat([]byte("x"), 5000), 0o644))
	must(os.WriteFile(filepath.Join(day, "sub", "nested"), []byte(`{"n":1}`), 0o644))
	must(os.Symlink(outside, filepath.Join(day, "to-outside")))
	must(os.Symlink("small", filepath.Join(day, "to-small")))
	must(syscall.Mkfifo(filepath.Join(day, "fifo"), 0o644)) // must not block a read
	must(os.Mkdir(filepath.Join(day, "folder"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "demo/dead-letter-archive/sqs/flat"), []byte(`{"f":1}`), 0o644))
	archive.SetMaxObjectSize(t, 4096)

	root := "demo/dead-letter-archive/sqs/"
	regular := map[string][]byte{
		root + "2024-03-01/small": []byte(`{"x":1}`), root + "2024-03-01/big": big, root + "2024-03-01/empty": {},
		root + "2024-03-01/sub/nested": []byte(`{"n":1}`), root + "flat": []byte(`{"f":1}`),
	}
	keys := []string{root + "2024-03-01/to-outside", root + "2024-03-01/to-small", root + "2024-03-01/fifo",
		root + "2024-03-01/folder", root + "2024-03-01/missing", root + "2024-03-01/huge", root + "2024-03-09/missing"}
	for k := range regular {
		keys = append(keys, k)
	}
	read := func(quick bool, key string) string {
		archive.SetQuickReads(t, quick)
		s, err := archive.NewLocal(dir)
		must(err)
		b, err := s.GetInto(ctx, key, make([]byte, 0, 16))
		return fmt.Sprintf("%q %v", b, err)
	}
	for _, k := range keys {
		long, short := read(false, k), read(true, k)
		if long != short {
			t.Errorf("%s: the short way gives %s, the long way %s", k, short, long)
		}
		if want, ok := regular[k]; ok && long != fmt.Sprintf("%q <nil>", want) {
			t.Errorf("%s: read %s, want its bytes", k, long)
		}
	}

	if runtime.GOOS != "linux" {
		return
	}
	s, err := archive.NewLocal(dir)
	must(err)
	for _, k := range keys {
		b, done, err := s.QuickGet(k, nil)
		want, isRegular := regular[k]
		switch {
		case k == root+"2024-03-01/huge":
			if !done || err == nil {
				t.Errorf("%s: the short way gave %v, %v; want it to refuse the size itself", k, done, err)
			}
		case isRegular && (!done || err != nil || !bytes.Equal(b, want)):
			t.Errorf("%s: the short way gave %v, %q, %v; want it to read the file", k, done, b, err)
		case !isRegular && done:
			t.Errorf("%s: the short way read %q, %v; want it to leave it to the long way", k, b, err)
		}
	}
}

// TestLocalQuickListingMatchesTheLongWay: listing date folders the short way
// (each opened relative to its open parent, O_NOFOLLOW|O_DIRECTORY) gives
// the same entries and the same errors as the long way (checked and opened
// through the os.Root) for every kind of folder entry: real folders (more
// than the folders kept open, so that the cache is emptied on the way), a
// link to a folder inside the archive, a link out of it, a file and a FIFO
// where a folder is named, and a folder that is missing.
func TestLocalQuickListingMatchesTheLongWay(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	sqs := filepath.Join(dir, "demo/dead-letter-archive/sqs")
	outside := t.TempDir()
	must(os.WriteFile(filepath.Join(outside, "secret"), []byte(`{"s":1}`), 0o600))
	folders := archive.WriteDateFolders(t, sqs, 300, 1, func(string, int) []byte { return []byte(`{"n":1}`) })
	must(os.Symlink(filepath.Join(sqs, folders[0]), filepath.Join(sqs, "2025-01-01")))
	must(os.Symlink(outside, filepath.Join(sqs, "2025-01-02")))
	must(os.WriteFile(filepath.Join(sqs, "2025-01-03"), []byte(`{}`), 0o644))
	must(syscall.Mkfifo(filepath.Join(sqs, "2025-01-04"), 0o644))
	folders = append(folders, "2025-01-01", "2025-01-02", "2025-01-03", "2025-01-04", "2025-01-05")

	list := func(quick bool) string {
		archive.SetQuickReads(t, quick)
		s, err := archive.NewLocal(dir)
		must(err)
		var b bytes.Buffer
		err = s.List(ctx, "demo/dead-letter-archive/sqs/", false, func(e archive.Entry) error {
			fmt.Fprintf(&b, "%s %v\n", e.Key, e.IsPrefix)
			return nil
		})
		fmt.Fprintf(&b, "walk: %v\n", err)
		for _, f := range folders { // each folder on its own, as a scan lists them
			err := s.List(ctx, "demo/dead-letter-archive/sqs/"+f+"/", false, func(e archive.Entry) error {
				fmt.Fprintf(&b, "%s\n", e.Key)
				return nil
			})
			fmt.Fprintf(&b, "%s: %v\n", f, err)
		}
		return b.String()
	}
	long, short := list(false), list(true)
	if long != short {
		t.Fatalf("the short way lists\n%s\nthe long way\n%s", short, long)
	}
	for _, want := range []string{"2025-01-01: demo/dead-letter-archive/sqs/2025-01-01/: sqs/2025-01-01 is a symbolic link", "2025-01-02: demo/dead-letter-archive/sqs/2025-01-02/: sqs/2025-01-02 is a symbolic link"} {
		if !strings.Contains(long, want) {
			t.Errorf("the listing says nothing like %q:\n%s", want, long)
		}
	}
}

// TestLocalFolderSwappedForAFIFONeverBlocks: a date folder checked by a
// listing, then put away and replaced by a FIFO while the command runs,
// is refused by every later listing, read and stat with an error naming
// it, never opened as a FIFO (an open for reading blocks until a writer
// comes: the command would hang). os.Root opens the last component of a
// name without O_DIRECTORY; the folder's check is remembered, so nothing
// looks at it again.
func TestLocalFolderSwappedForAFIFONeverBlocks(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	sqs := filepath.Join(dir, "demo/dead-letter-archive/sqs")
	root := "demo/dead-letter-archive/sqs/"
	folders := archive.WriteDateFolders(t, sqs, 60, 1, func(string, int) []byte { return []byte(`{}`) }) // more than the folders kept open
	s, err := archive.NewLocal(dir)
	must(err)
	list := func(prefix string) error {
		return s.List(ctx, prefix, false, func(archive.Entry) error { return nil })
	}
	must(list(root)) // every folder checked, and the first ones let go since
	swapped := filepath.Join(sqs, folders[0])
	must(os.Rename(swapped, filepath.Join(t.TempDir(), "away")))
	must(syscall.Mkfifo(swapped, 0o644))
	key := root + folders[0] + "/o0"
	for _, op := range []struct {
		name string
		do   func() error
	}{
		{"list", func() error { return list(root + folders[0] + "/") }},
		{"stat", func() error { _, err := s.Stat(ctx, key); return err }},
		{"get", func() error { _, err := s.GetInto(ctx, key, nil); return err }},
	} {
		done := make(chan error, 1)
		go func() { done <- op.do() }()
		select {
		case err := <-done:
			want := key // a read's error names its key
			if op.name == "list" {
				want = folders[0]
			}
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s of a folder swapped for a FIFO: %v; want an error naming %s", op.name, err, want)
			}
		case <-time.After(5 * time.Second):
			f, err := os.OpenFile(swapped, os.O_WRONLY, 0) // let it go
			if err == nil {
				f.Close()
			}
			t.Errorf("%s of a folder swapped for a FIFO blocked", op.name)
		}
	}
}

// TestLocalObjectSwappedForAFIFOBetweenCheckAndOpenNeverBlocks: an object
// replaced by a FIFO (and back, over and over) while it is read or stated
// never blocks the command: the long way checks the object (lstat) and
// then opens it by its path, and a FIFO renamed into place between the two
// must fail its identity check, not hang the open until a writer comes.
func TestLocalObjectSwappedForAFIFOBetweenCheckAndOpenNeverBlocks(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	day := filepath.Join(dir, "demo/dead-letter-archive/sqs/2024-03-01")
	if err := os.MkdirAll(day, 0o755); err != nil {
		t.Fatal(err)
	}
	obj := filepath.Join(day, "obj")
	key := "demo/dead-letter-archive/sqs/2024-03-01/obj"
	if err := os.WriteFile(obj, []byte(`{}`), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := archive.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	swapped := make(chan struct{})
	go func() {
		defer close(swapped)
		fifo, file := filepath.Join(day, "f"), filepath.Join(day, "r")
		for {
			select {
			case <-stop:
				return
			default:
			}
			if syscall.Mkfifo(fifo, 0o644) == nil {
				os.Rename(fifo, obj)
			}
			if os.WriteFile(file, []byte(`{}`), 0o644) == nil {
				os.Rename(file, obj)
			}
		}
	}()
	defer func() { close(stop); <-swapped }()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 3000 {
			s.Stat(ctx, key)
			b, err := s.GetInto(ctx, key, nil)
			if err == nil && string(b) != `{}` {
				t.Errorf("read %q", b)
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("a read or stat of an object swapped for a FIFO blocked")
	}
}
