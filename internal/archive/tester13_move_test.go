package archive_test

import (
	"context"
	"errors"
	"testing"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// changeSourceBeforeCopy is a store in which another writer replaces src
// (a re-archive of the same message, a user's manual fix) after the mover
// read it and before the copy is made.
type changeSourceBeforeCopy struct {
	archive.Store
	src     string
	newBody []byte
	done    bool
}

func (c *changeSourceBeforeCopy) PutNew(ctx context.Context, key string, body []byte, origin string) error {
	if !c.done {
		c.done = true
		if err := c.Store.Put(ctx, c.src, c.newBody); err != nil {
			return err
		}
	}
	return c.Store.PutNew(ctx, key, body, origin)
}

// tester13: Move's doc says "a changed source ... leaves the original in
// place rather than losing it". MoveAs (what migrate-legacy calls with the
// body it hoisted from its own earlier Get) and Move both delete src
// unconditionally once the destination holds the bytes they read: when src
// was rewritten in between, its new bytes are deleted and exist nowhere.
// DEFECT (move.go: s.Delete(ctx, src) is not conditional on src still
// holding what was read — no ETag/If-Match or re-read before the delete).
// Against versitygw.
func TestTester13MoveDeletesAChangedSource(t *testing.T) {
	client := testsupport.S3Client(t)
	for _, as := range []bool{false, true} {
		name := "Move"
		if as {
			name = "MoveAs"
		}
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s3 := archive.NewS3(client, testsupport.NewBucket(t, client))
			src, dst := "stack/dead-letter-archive/sqs/legacy.json", "stack/dead-letter-archive/sqs/2024-01-01/legacy.json"
			old, newer := []byte(`{"v":"old"}`), []byte(`{"v":"new, written while the move ran"}`)
			if err := s3.Put(ctx, src, old); err != nil {
				t.Fatal(err)
			}
			store := &changeSourceBeforeCopy{Store: s3, src: src, newBody: newer}
			var got string
			var err error
			if as {
				got, err = archive.MoveAs(ctx, store, src, dst, []byte(`{"hoisted":"old"}`))
			} else {
				got, err = archive.Move(ctx, store, src, dst)
			}
			t.Logf("move returned %q, %v", got, err)
			// The new bytes must still exist somewhere: at src, or at the
			// destination.
			found := false
			for _, k := range []string{src, dst, dst + ".1"} {
				b, gerr := s3.Get(ctx, k)
				if gerr == nil && string(b) == string(newer) {
					found = true
				} else if gerr != nil && !errors.Is(gerr, archive.ErrNotFound) {
					t.Fatal(gerr)
				}
			}
			if !found {
				t.Fatalf("the source was rewritten during the move and its new bytes %s are gone (move returned %q, %v)", newer, got, err)
			}
		})
	}
}
