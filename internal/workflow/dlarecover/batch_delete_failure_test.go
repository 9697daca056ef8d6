package dlarecover

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
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

// flakyDeletes is a store whose first DeleteMany call fails whole and
// whose second refuses its first key.
type flakyDeletes struct {
	archive.Store
	mu    sync.Mutex
	calls int
}

func (f *flakyDeletes) DeleteMany(ctx context.Context, keys []string) (map[string]error, error) {
	f.mu.Lock()
	f.calls++
	n := f.calls
	f.mu.Unlock()
	switch n {
	case 1:
		return nil, errors.New("InternalError: we encountered an internal error")
	case 2:
		failed, err := f.Store.DeleteMany(ctx, keys[1:])
		if failed == nil {
			failed = map[string]error{}
		}
		failed[keys[0]] = errors.New("AccessDenied")
		return failed, err
	}
	return f.Store.DeleteMany(ctx, keys)
}

// TestBatchDeleteFailureBeforeTheLastIsReported: a batch delete
// that fails (wholly, or for some keys) before the last batch. The
// written objects it left in place were reported "deleted" on their
// lines; the run returned nil (dla recover exited 0) and, for the whole
// failure, nothing at all said they were still there: Run discarded the
// error of every batch but the last one, in the background deleter and in
// the worker alike. The run must end with an error, warn of
// each written object left in place, say on its line that it was left
// (a line says "deleted" only once its delete returned), and count as
// deleted only what is gone.
func TestBatchDeleteFailureBeforeTheLastIsReported(t *testing.T) {
	defer func(n int) { deleteBatch = n }(deleteBatch)
	deleteBatch = 3
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	ctx := context.Background()
	dbURL := testsupport.NewCumulusDatabase(t, gen.ReferenceSeed())
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	local, err := archive.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	store := &flakyDeletes{Store: local}
	spool, err := NewObjectSpool()
	if err != nil {
		t.Fatal(err)
	}
	defer spool.Close()
	if err := gen.Generate(gen.Options{Stack: "s", Count: 40, Seed: 11, Days: 1, MinGranules: 1, MaxGranules: 2},
		func(o gen.Object) error {
			if err := local.Put(ctx, o.Key, o.Body); err != nil {
				return err
			}
			d, derr := dla.Decode(o.Body)
			return spool.Add(o.Key, d, derr)
		}); err != nil {
		t.Fatal(err)
	}
	var warnings []string
	var wmu sync.Mutex
	r := &recoverRun{Store: store, Layout: dla.Layout{Stack: "s"}, DB: testsupport.CumulusDB(t, pool), Pool: pool,
		Writer: &recovery.Writer{Now: func() time.Time { return now }}, Concurrency: 1,
		Now: func() time.Time { return now }, Sum: &Summary{Selected: spool.Len()}, Objects: spool,
		Warnf: func(format string, args ...any) {
			wmu.Lock()
			warnings = append(warnings, fmt.Sprintf(format, args...))
			wmu.Unlock()
		}}
	action := map[string]string{}
	var written []string
	runErr := r.runScope(ctx, selection.Scope{Layout: dla.Layout{Stack: "s"}}, func(o Object) error {
		if o.Result == recovery.Written || o.Result == recovery.Dropped {
			written = append(written, o.Key)
			action[o.Key] = string(o.Action)
		}
		return nil
	})
	if len(written) < 3*deleteBatch || store.calls < 3 {
		t.Fatalf("only %d objects written in %d delete calls: the test needs several batches", len(written), store.calls)
	}
	gone, stillThere := 0, []string{}
	for _, k := range written {
		if _, err := local.Stat(ctx, k); err == nil {
			stillThere = append(stillThere, k)
			if action[k] == "deleted" {
				t.Errorf("%s is still in place, and its line says deleted", k)
			}
		} else {
			gone++
			if action[k] != "deleted" {
				t.Errorf("%s was deleted, and its line says %q", k, action[k])
			}
		}
	}
	if len(stillThere) < 2 {
		t.Fatalf("%d written objects still in place, want the first batch and the refused key", len(stillThere))
	}
	if r.Sum.Deleted != gone {
		t.Errorf("summary says %d deleted, %d are gone", r.Sum.Deleted, gone)
	}
	if runErr == nil {
		t.Errorf("Run returned nil although %d written objects reported deleted are still in place", len(stillThere))
	}
	all := strings.Join(warnings, "\n")
	for _, k := range stillThere {
		if !strings.Contains(all, k) {
			t.Errorf("%s is reported deleted, is still in place, and no warning names it", k)
		}
	}
}
