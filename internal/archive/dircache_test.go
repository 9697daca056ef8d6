package archive

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// TestDirCacheClosesADroppedFolderOnlyWhenNoReadUsesIt: a folder let go
// while a read holds it stays open until that read is done (its
// descriptor's number must not be reused under the read), and is closed
// then; one nobody holds is closed at once.
func TestDirCacheClosesADroppedFolderOnlyWhenNoReadUsesIt(t *testing.T) {
	open := func() *os.File {
		f, err := os.Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	closed := func(f *os.File) bool { _, err := f.Stat(); return err != nil }
	var c dirCache
	k1, k2 := folderKey{"t", "a"}, folderKey{"t", "b"}
	f1, f2 := open(), open()
	h1 := c.put(k1, f1, folderKey{})
	c.release(h1)
	h2 := c.put(k2, f2, folderKey{}) // held by its put
	if c.put(k2, open(), folderKey{}) != nil {
		t.Fatal("a folder kept already was kept twice")
	}
	c.drop(k1)
	c.drop(k2)
	if !closed(f1) {
		t.Error("a folder nobody used was not closed when it was let go")
	}
	if closed(f2) {
		t.Fatal("a folder a read still uses was closed")
	}
	if c.m[k2] != nil {
		t.Fatal("a dropped folder is still kept")
	}
	c.release(h2)
	if !closed(f2) {
		t.Error("a dropped folder was not closed when its last read was done")
	}
}

// TestAScanOfManyFoldersKeepsFewOpen: reading the objects of 300 date
// folders in order keeps at most maxDirFiles folders (and their parent)
// open, whatever the garbage collector does: folders left for it to close
// took a scan past 1,000 descriptors, and each doubling of the process's
// descriptor table stalls every thread that opens a file.
func TestAScanOfManyFoldersKeepsFewOpen(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the folders are kept open by the Linux reads only")
	}
	dir := t.TempDir()
	sqs := filepath.Join(dir, "demo/dead-letter-archive/sqs")
	WriteDateFolders(t, sqs, 300, 2, func(string, int) []byte { return []byte(`{}`) })
	fds := func() int {
		es, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Skip("no /proc/self/fd")
		}
		return len(es)
	}
	before := fds()
	l, err := NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	most, read := 0, 0
	err = l.List(ctx, "demo/dead-letter-archive/sqs/", true, func(folder Entry) error {
		return l.List(ctx, folder.Key, false, func(e Entry) error {
			if _, err := l.GetInto(ctx, e.Key, nil); err != nil {
				return err
			}
			read++
			most = max(most, fds()-before)
			return nil
		})
	})
	if err != nil || read != 600 {
		t.Fatalf("read %d objects (%v), want 600", read, err)
	}
	// The folders kept, their parent, and the top's os.Root.
	if limit := maxDirFiles + 4; most > limit {
		t.Fatalf("up to %d more descriptors open during the scan, want at most %d", most, limit)
	}
}

// TestDirCacheForgetsTheKeysOfFoldersDroppedByHand: folders dropped one by
// one (a move or a prune) leave no trace in the cache's order, so that it
// stays small and a folder put again is not let go for its old place.
func TestDirCacheForgetsTheKeysOfFoldersDroppedByHand(t *testing.T) {
	var c dirCache
	keep := folderKey{"t", "keep"}
	f, err := os.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c.release(c.put(keep, f, folderKey{}))
	for i := range 10 * maxDirFiles {
		k := folderKey{"t", fmt.Sprint(i)}
		f, err := os.Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		c.release(c.put(k, f, keep))
		c.drop(k)
	}
	if len(c.order) > 2*maxDirFiles+1 {
		t.Fatalf("the order holds %d keys for %d folders kept", len(c.order), len(c.m))
	}
	if c.m[keep] == nil {
		t.Fatal("the folder kept first was let go")
	}
}
