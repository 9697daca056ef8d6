package dlarecover

import (
	"bytes"
	"context"
	"crypto/md5"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/dla/gen"
	"github.com/deadletter/deadletter/internal/recovery"
	"github.com/deadletter/deadletter/internal/selection"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// TestObjectRewrittenAfterThePlanIsNotDeleted: an object rewritten between
// the plan's read and its delete holds a message nobody wrote. Recover
// writes what the plan read (from the plan's spool, or fetched again in the
// write pass) and must then leave the object in place, holding its new
// bytes, and say so, on S3 and in a local folder, with the spool and
// without. Before the deletes were made conditional on the digest of what
// was read, the spooled path deleted the new message unwritten.
func TestObjectRewrittenAfterThePlanIsNotDeleted(t *testing.T) {
	ctx := context.Background()
	var bodies [][]byte
	_ = gen.Generate(gen.Options{Stack: "s", Count: 40, Seed: 3, Days: 1, MinGranules: 1, MaxGranules: 1}, func(o gen.Object) error {
		if d, err := dla.Decode(o.Body); err == nil && d.ExecutionArn != "" && len(bodies) < 2 {
			if m, err := recovery.Unwrap(ctx, d, nil, nil); err == nil && strings.Contains(m.JSON.Raw, `"status":"completed"`) {
				bodies = append(bodies, o.Body)
			}
		}
		return nil
	})
	if len(bodies) < 2 {
		t.Fatal("the generator gave fewer than two completed messages")
	}
	stores := map[string]func(t *testing.T) archive.Store{
		"local": func(t *testing.T) archive.Store {
			s, err := archive.NewLocal(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		"s3": func(t *testing.T) archive.Store {
			c := testsupport.S3Client(t)
			return archive.NewS3(c, testsupport.NewBucket(t, c))
		},
	}
	for name, newStore := range stores {
		for _, spooled := range []bool{true, false} {
			t.Run(name+map[bool]string{true: "/spooled", false: "/fetched-again"}[spooled], func(t *testing.T) {
				dbURL := testsupport.NewCumulusDatabase(t, gen.ReferenceSeed())
				pool, err := pgxpool.New(ctx, dbURL)
				if err != nil {
					t.Fatal(err)
				}
				defer pool.Close()
				store := newStore(t)
				key := "s/dead-letter-archive/sqs/2024-03-01/x"
				if err := store.Put(ctx, key, bodies[0]); err != nil {
					t.Fatal(err)
				}
				scope := selection.Scope{Layout: dla.Layout{Stack: "s"}, Digest: true}
				r := &recoverRun{Store: store, Layout: dla.Layout{Stack: "s"}, DB: testsupport.CumulusDB(t, pool), Pool: pool,
					Writer: &recovery.Writer{}, Concurrency: 1, Now: time.Now, Sum: &Summary{Selected: 1}}
				var warned []string
				r.Warnf = func(f string, a ...any) { warned = append(warned, f) }
				if spooled {
					spool, err := NewObjectSpool()
					if err != nil {
						t.Fatal(err)
					}
					defer spool.Close()
					d, derr := dla.Decode(bodies[0])
					d.Digest, d.HasDigest = md5.Sum(bodies[0]), true // as the plan's read sets it
					if err := spool.Add(key, d, derr); err != nil {
						t.Fatal(err)
					}
					r.Objects = spool
				} else {
					scope.Keys = []string{key}
				}
				// Rewritten after the read: in the spooled case after the
				// plan; fetched again, after the write pass's own read, the
				// moment its write is done, just before its delete (its
				// line comes only once the delete returned).
				rewrite := func() {
					if err := store.Put(ctx, key, bodies[1]); err != nil {
						t.Error(err)
					}
				}
				if spooled {
					rewrite()
				} else {
					r.Store = &rewriteBeforeDelete{Store: store, rewrite: rewrite}
				}
				var lines []Object
				err = r.runScope(ctx, scope, func(o Object) error {
					lines = append(lines, o)
					return nil
				})
				if err == nil || !strings.Contains(err.Error(), "could not be deleted") {
					t.Errorf("Run returned %v, want the object that could not be deleted", err)
				}
				if len(lines) != 1 || lines[0].Result == "failed" {
					t.Fatalf("lines: %+v", lines)
				}
				now, err := store.Get(ctx, key)
				if err != nil {
					t.Fatalf("the rewritten object is gone (its new message never written): %v", err)
				}
				if !bytes.Equal(now, bodies[1]) {
					t.Fatal("the object does not hold its rewritten bytes")
				}
				if r.Sum.Deleted != 0 {
					t.Errorf("Deleted = %d, want 0", r.Sum.Deleted)
				}
				if len(warned) != 1 || !strings.Contains(warned[0], "rewritten since it was read") {
					t.Errorf("warnings: %q", warned)
				}
			})
		}
	}
}

// rewriteBeforeDelete is a store where another process rewrites the object
// just before recover's conditional delete of what it wrote.
type rewriteBeforeDelete struct {
	archive.Store
	rewrite func()
}

func (s *rewriteBeforeDelete) DeleteFast(ctx context.Context, key string, sum [md5.Size]byte) error {
	s.rewrite()
	return archive.DeleteFast(ctx, s.Store, key, sum)
}
