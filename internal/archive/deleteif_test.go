package archive_test

import (
	"context"
	"errors"
	"testing"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// The conditional delete a move ends with, on S3 and on a local folder:
// other bytes keep the object (ErrChanged), a gone object says so
// (ErrNotFound), the bytes read delete it.
func TestDeleteIfUnchanged(t *testing.T) {
	client := testsupport.S3Client(t)
	local, err := archive.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]archive.Store{"S3": archive.NewS3(client, testsupport.NewBucket(t, client)), "Local": local} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			key := "stack/dead-letter-archive/sqs/2024-01-01/k"
			if err := s.Put(ctx, key, []byte("rewritten")); err != nil {
				t.Fatal(err)
			}
			if err := archive.DeleteCheckedBody(ctx, s, key, []byte("as read")); !errors.Is(err, archive.ErrChanged) {
				t.Fatalf("other bytes: %v, want ErrChanged", err)
			}
			if b, err := s.Get(ctx, key); err != nil || string(b) != "rewritten" {
				t.Fatalf("the rewritten object was not kept: %q, %v", b, err)
			}
			if err := archive.DeleteCheckedBody(ctx, s, key, []byte("rewritten")); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Get(ctx, key); !errors.Is(err, archive.ErrNotFound) {
				t.Fatalf("not deleted: %v", err)
			}
			if err := archive.DeleteCheckedBody(ctx, s, key, []byte("rewritten")); !errors.Is(err, archive.ErrNotFound) {
				t.Fatalf("gone: %v, want ErrNotFound", err)
			}
		})
	}
}
