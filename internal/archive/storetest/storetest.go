// Package storetest is the contract every archive.Store implementation
// passes: the S3 store against a real S3 server, the local store on disk.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/archive"
)

// Run runs the contract against stores made by newStore (an empty store
// for each subtest).
func Run(t *testing.T, newStore func(t *testing.T) archive.Store) {
	ctx := context.Background()
	put := func(t *testing.T, s archive.Store, keys ...string) {
		t.Helper()
		for _, k := range keys {
			if err := s.Put(ctx, k, []byte(`{"key":"`+k+`"}`)); err != nil {
				t.Fatalf("put %s: %v", k, err)
			}
		}
	}
	list := func(t *testing.T, s archive.Store, prefix string, delimited bool) []string {
		t.Helper()
		var got []string
		err := s.List(ctx, prefix, delimited, func(e archive.Entry) error {
			if e.IsPrefix {
				got = append(got, e.Key+" (folder)")
			} else {
				got = append(got, e.Key)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("list %q: %v", prefix, err)
		}
		return got
	}

	t.Run("put get and not found", func(t *testing.T) {
		s := newStore(t)
		put(t, s, "st/dead-letter-archive/sqs/2024-01-01/a")
		b, err := s.Get(ctx, "st/dead-letter-archive/sqs/2024-01-01/a")
		if err != nil || string(b) != `{"key":"st/dead-letter-archive/sqs/2024-01-01/a"}` {
			t.Fatalf("get = %q, %v", b, err)
		}
		if _, err := s.Get(ctx, "st/dead-letter-archive/sqs/2024-01-01/missing"); !errors.Is(err, archive.ErrNotFound) {
			t.Fatalf("get missing: err = %v, want ErrNotFound", err)
		}
		e, err := s.Stat(ctx, "st/dead-letter-archive/sqs/2024-01-01/a")
		if err != nil || e.Size != int64(len(b)) || time.Since(e.LastModified) > time.Hour || e.LastModified.Location() != time.UTC {
			t.Fatalf("stat = %+v, %v", e, err)
		}
		if _, err := s.Stat(ctx, "st/dead-letter-archive/sqs/2024-01-01/missing"); !errors.Is(err, archive.ErrNotFound) {
			t.Fatalf("stat missing: err = %v, want ErrNotFound", err)
		}
		buf := make([]byte, 0, 4)
		got, err := s.GetInto(ctx, "st/dead-letter-archive/sqs/2024-01-01/a", buf)
		if err != nil || string(got) != string(b) {
			t.Fatalf("get into a small buffer = %q, %v", got, err)
		}
	})

	t.Run("list in key order, recursive and delimited", func(t *testing.T) {
		s := newStore(t)
		root := "st/dead-letter-archive/sqs/"
		put(t, s, root+"2024-01-02/b", root+"2024-01-01/z", root+"2024-01-01/a", root+"legacy-1.json",
			root+"2024-01-01-x.json", root+"2024/3/21/10/old", "st/dead-letter-archive/failed-sqs/2024-01-01/f")
		want := []string{root + "2024-01-01-x.json", root + "2024-01-01/a", root + "2024-01-01/z", root + "2024-01-02/b",
			root + "2024/3/21/10/old", root + "legacy-1.json"}
		if got := list(t, s, root, false); !slices.Equal(got, want) {
			t.Errorf("recursive list:\n got %q\nwant %q", got, want)
		}
		wantDelim := []string{root + "2024-01-01-x.json", root + "2024-01-01/ (folder)", root + "2024-01-02/ (folder)",
			root + "2024/ (folder)", root + "legacy-1.json"}
		if got := list(t, s, root, true); !slices.Equal(got, wantDelim) {
			t.Errorf("delimited list:\n got %q\nwant %q", got, wantDelim)
		}
		if got := list(t, s, root+"2024-01-0", true); !slices.Equal(got, wantDelim[:3]) {
			t.Errorf("list by name prefix:\n got %q\nwant %q", got, wantDelim[:3])
		}
		if got := list(t, s, "nothing/here/", false); len(got) != 0 {
			t.Errorf("list of an absent prefix = %q", got)
		}
	})

	t.Run("list many keys across pages", func(t *testing.T) {
		s := newStore(t)
		var want []string
		for d := 1; d <= 3; d++ {
			for i := range 9 {
				k := fmt.Sprintf("st/dead-letter-archive/sqs/2024-02-%02d/obj-%03d", d, i)
				put(t, s, k)
				want = append(want, k)
			}
		}
		if got := list(t, s, "st/dead-letter-archive/sqs/", false); !slices.Equal(got, want) {
			t.Errorf("got %d keys, want %d in order", len(got), len(want))
		}
		folders := list(t, s, "st/dead-letter-archive/sqs/", true)
		if len(folders) != 3 || folders[2] != "st/dead-letter-archive/sqs/2024-02-03/ (folder)" {
			t.Errorf("folders = %q", folders)
		}
	})

	t.Run("put new with special characters, never over an object", func(t *testing.T) {
		s := newStore(t)
		key := "st/dead-letter-archive/failed-sqs/2024-01-01/exec a+b:ü=1&x-uuid"
		if err := s.PutNew(ctx, key, []byte("first"), "origin-1"); err != nil {
			t.Fatalf("put new: %v", err)
		}
		if err := s.PutNew(ctx, key, []byte("second"), "origin-2"); !errors.Is(err, archive.ErrExists) {
			t.Fatalf("put new over an object: err = %v, want ErrExists", err)
		}
		if b, err := s.Get(ctx, key); err != nil || string(b) != "first" {
			t.Fatalf("the object was replaced: %q, %v", b, err)
		}
	})

	t.Run("move never overwrites: same name from two dates", func(t *testing.T) {
		s := newStore(t)
		a := "st/dead-letter-archive/sqs/2024-03-01/dup.json"
		b := "st/dead-letter-archive/sqs/2024-03-02/dup.json"
		dst := "st/dead-letter-archive/failed-sqs/2024-03-01/dup.json"
		put(t, s, a, b)
		gotA, err := archive.Move(ctx, s, a, dst)
		if err != nil || gotA != dst {
			t.Fatalf("move a = %q, %v", gotA, err)
		}
		gotB, err := archive.Move(ctx, s, b, dst)
		if err != nil || gotB != dst+".1" {
			t.Fatalf("move b = %q, %v; want %s.1", gotB, err, dst)
		}
		for key, want := range map[string]string{gotA: a, gotB: b} {
			if got, err := s.Get(ctx, key); err != nil || string(got) != `{"key":"`+want+`"}` {
				t.Errorf("%s = %q, %v; want the bytes of %s", key, got, err, want)
			}
		}
		for _, k := range []string{a, b} {
			if _, err := s.Get(ctx, k); !errors.Is(err, archive.ErrNotFound) {
				t.Errorf("source %s still there after its move: %v", k, err)
			}
		}
		// Two objects holding the same bytes under one name stay two.
		same1 := "st/dead-letter-archive/sqs/2024-03-04/same.json"
		same2 := "st/dead-letter-archive/sqs/2024-03-05/same.json"
		for _, k := range []string{same1, same2} {
			if err := s.Put(ctx, k, []byte("identical")); err != nil {
				t.Fatal(err)
			}
		}
		sameDst := "st/dead-letter-archive/failed-sqs/2024-03-04/same.json"
		g1, err1 := archive.Move(ctx, s, same1, sameDst)
		g2, err2 := archive.Move(ctx, s, same2, sameDst)
		if err1 != nil || err2 != nil || g1 != sameDst || g2 != sameDst+".1" {
			t.Fatalf("identical objects: %q %v, %q %v; want two copies", g1, err1, g2, err2)
		}
	})

	t.Run("delete and delete many", func(t *testing.T) {
		s := newStore(t)
		root := "st/dead-letter-archive/sqs/"
		put(t, s, root+"2024-01-01/a", root+"2024-01-01/b", root+"2024-01-02/c", root+"2024-01-02/d")
		if err := s.Delete(ctx, root+"2024-01-01/a"); err != nil {
			t.Fatal(err)
		}
		if err := s.Delete(ctx, root+"2024-01-01/never-existed"); err != nil {
			t.Fatalf("deleting an absent key: %v", err)
		}
		failed, err := s.DeleteMany(ctx, []string{root + "2024-01-01/b", root + "2024-01-02/c"})
		if err != nil || len(failed) != 0 {
			t.Fatalf("delete many: %v %v", failed, err)
		}
		if got := list(t, s, root, true); !slices.Equal(got, []string{root + "2024-01-02/ (folder)"}) {
			t.Errorf("after deletes, delimited list = %q", got)
		}
		if got := list(t, s, root, false); !slices.Equal(got, []string{root + "2024-01-02/d"}) {
			t.Errorf("after deletes, list = %q", got)
		}
	})

	t.Run("list stops when the callback fails", func(t *testing.T) {
		s := newStore(t)
		put(t, s, "st/a", "st/b", "st/c")
		stop := errors.New("stop")
		n := 0
		err := s.List(ctx, "st/", false, func(archive.Entry) error { n++; return stop })
		if !errors.Is(err, stop) || n != 1 {
			t.Fatalf("err = %v after %d entries", err, n)
		}
	})
}
