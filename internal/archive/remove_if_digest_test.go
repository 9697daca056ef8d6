package archive_test

import (
	"context"
	"crypto/md5"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// ignoresIfMatch is an S3 server that ignores If-Match on DeleteObject (as
// some S3-compatible servers do): the request reaches versitygw without it.
type ignoresIfMatch struct{ *s3.Client }

func (c ignoresIfMatch) DeleteObject(ctx context.Context, in *s3.DeleteObjectInput, opts ...func(*s3.Options)) (*s3.DeleteObjectOutput, error) {
	plain := *in
	plain.IfMatch = nil
	return c.Client.DeleteObject(ctx, &plain, opts...)
}

// DeleteFast on S3: once the server is seen to honour If-Match on
// DeleteObject, an unchanged object is deleted with that one request; an
// object rewritten since it was read is kept (ErrChanged) before and after
// the probe; an object gone already is ErrNotFound or, where the server's
// answer does not tell, no error.
func TestRemoveIfDigestIsOneRequestWhereIfMatchIsHonoured(t *testing.T) {
	proxy := testsupport.NewProxy(t, testsupport.S3Endpoint(t))
	client := testsupport.S3ClientAt(proxy.URL)
	s := archive.NewS3(client, testsupport.NewBucket(t, testsupport.S3Client(t)))
	ctx := context.Background()
	put := func(key, body string) {
		t.Helper()
		if err := s.Put(ctx, key, []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []string{"a", "b", "c"} {
		put(k, "as read "+k)
	}
	put("changed", "rewritten")

	// The first call probes (HEAD, a refused DeleteObject, the delete).
	if err := archive.DeleteFast(ctx, s, "a", md5.Sum([]byte("as read a"))); err != nil {
		t.Fatal(err)
	}
	before := proxy.Calls()
	if err := archive.DeleteFast(ctx, s, "b", md5.Sum([]byte("as read b"))); err != nil {
		t.Fatal(err)
	}
	after := proxy.Calls()
	if after["DeleteObject"]-before["DeleteObject"] != 1 || after["HeadObject"] != before["HeadObject"] || after["GetObject"] != before["GetObject"] {
		t.Errorf("calls of the second delete: before %v, after %v; want one DeleteObject", before, after)
	}
	if err := archive.DeleteFast(ctx, s, "changed", md5.Sum([]byte("as read"))); !errors.Is(err, archive.ErrChanged) {
		t.Fatalf("rewritten: %v, want ErrChanged", err)
	}
	// Gone already: ErrNotFound where the server says so (S3's 404), nil
	// where its answer does not tell (versitygw's 204).
	if err := archive.DeleteFast(ctx, s, "gone", md5.Sum([]byte("x"))); err != nil && !errors.Is(err, archive.ErrNotFound) {
		t.Fatalf("gone already: %v, want nil or ErrNotFound", err)
	}
	for key, want := range map[string]bool{"a": false, "b": false, "c": true, "changed": true} {
		_, err := s.Get(ctx, key)
		if exists := err == nil; exists != want {
			t.Errorf("%s exists %v, want %v (%v)", key, exists, want, err)
		}
	}
}

// On a server that ignores If-Match on DeleteObject, the probe finds it
// out, and every later call checks the bytes first: a rewritten object is
// never deleted.
func TestRemoveIfDigestNeverTrustsAnIgnoredIfMatch(t *testing.T) {
	real := testsupport.S3Client(t)
	s := archive.NewS3(ignoresIfMatch{real}, testsupport.NewBucket(t, real))
	ctx := context.Background()
	for _, k := range []string{"a", "b"} {
		if err := s.Put(ctx, k, []byte("as read "+k)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Put(ctx, "changed", []byte("rewritten")); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "b"} {
		if err := archive.DeleteFast(ctx, s, k, md5.Sum([]byte("as read "+k))); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Get(ctx, k); !errors.Is(err, archive.ErrNotFound) {
			t.Fatalf("%s not deleted: %v", k, err)
		}
	}
	if err := archive.DeleteFast(ctx, s, "changed", md5.Sum([]byte("as read"))); !errors.Is(err, archive.ErrChanged) {
		t.Fatalf("rewritten: %v, want ErrChanged", err)
	}
	if b, err := s.Get(ctx, "changed"); err != nil || string(b) != "rewritten" {
		t.Fatalf("the rewritten object was deleted: %q, %v", b, err)
	}
}
