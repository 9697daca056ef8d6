package archive

import (
	"context"
	"crypto/md5"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// Of runs removing one local object at once, exactly one deletes it and
// the others find it gone (ErrNotFound): two recover runs over one archive
// both counted 18 of 2,780 objects as deleted, since the loser's remove of
// a file no longer there counted as success. An object whose bytes
// changed is left as it is (ErrChanged), and no temporary file is left.
func TestLocalRemoveIfDigestDeletesForOneRunOnly(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	l, err := NewLocal(root)
	if err != nil {
		t.Fatal(err)
	}
	key := "s/dead-letter-archive/sqs/2024-03-01/m1"
	body := []byte(`{"message":1}`)
	for round := range 50 {
		if err := l.Put(ctx, key, body); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = DeleteFast(ctx, l, key, md5.Sum(body))
			}()
		}
		wg.Wait()
		deleted := 0
		for _, err := range errs {
			switch {
			case err == nil:
				deleted++
			case !errors.Is(err, ErrNotFound):
				t.Fatalf("round %d: %v", round, err)
			}
		}
		if deleted != 1 {
			t.Fatalf("round %d: %d runs deleted the object, want 1 (%v)", round, deleted, errs)
		}
	}

	if err := l.Put(ctx, key, []byte("other bytes")); err != nil {
		t.Fatal(err)
	}
	if err := DeleteFast(ctx, l, key, md5.Sum(body)); !errors.Is(err, ErrChanged) {
		t.Fatalf("changed object: %v, want ErrChanged", err)
	}
	if got, err := l.Get(ctx, key); err != nil || string(got) != "other bytes" {
		t.Fatalf("the changed object is now %q (%v)", got, err)
	}
	entries, _ := os.ReadDir(filepath.Join(root, "s", "dead-letter-archive", "sqs", "2024-03-01"))
	if len(entries) != 1 || entries[0].Name() != "m1" {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("the folder holds %v, want only m1", names)
	}
}
