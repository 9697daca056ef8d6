package dlarecover

import (
	"context"
	"errors"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/dla/gen"
	"github.com/deadletter/deadletter/internal/recovery"
	"github.com/deadletter/deadletter/internal/selection"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// TestDatabaseCutMidRunDeletesOnlyWhatWasWritten cuts the database (testsupport's TCP
// proxy) after a dozen objects (prefetch, background deletes), at
// concurrency 1 and 8, deletes batched by 4.
// The run must stop; an object gone from the archive must have been
// written (its execution is in the database); one reported left must be in
// place; the summary's Deleted must be what is gone, and its counts add
// up.
func TestDatabaseCutMidRunDeletesOnlyWhatWasWritten(t *testing.T) {
	defer func(n int) { deleteBatch = n }(deleteBatch)
	deleteBatch = 4
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	for _, conc := range []int{1, 8} {
		name := strconv.Itoa(conc)
		ctx := context.Background()
		dbURL := testsupport.NewCumulusDatabase(t, gen.ReferenceSeed())
		u, err := url.Parse(dbURL)
		if err != nil {
			t.Fatal(err)
		}
		proxy := testsupport.NewTCPProxy(t, u.Host)
		pool, err := pgxpool.New(ctx, proxy.ViaProxy(t, dbURL))
		if err != nil {
			t.Fatal(err)
		}
		local, err := archive.NewLocal(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		spool, err := NewObjectSpool()
		if err != nil {
			t.Fatal(err)
		}
		arns := map[string]string{}
		if err := gen.Generate(gen.Options{Stack: "s", Count: 80, Seed: 31, Days: 1, MinGranules: 1, MaxGranules: 3},
			func(o gen.Object) error {
				if err := local.Put(ctx, o.Key, o.Body); err != nil {
					return err
				}
				d, derr := dla.Decode(o.Body)
				if derr == nil {
					arns[o.Key] = d.ExecutionArn
				}
				return spool.Add(o.Key, d, derr)
			}); err != nil {
			t.Fatal(err)
		}
		r := &recoverRun{Store: local, Layout: dla.Layout{Stack: "s"}, DB: testsupport.CumulusDB(t, pool), Pool: pool,
			Writer: &recovery.Writer{Now: func() time.Time { return now }}, Concurrency: conc,
			Now: func() time.Time { return now }, Sum: &Summary{Selected: spool.Len()}, Objects: spool}
		lines := map[string]Object{}
		n := 0
		runErr := r.runScope(ctx, selection.Scope{Layout: dla.Layout{Stack: "s"}}, func(o Object) error {
			lines[o.Key] = o
			if n++; n == 12 {
				proxy.Cut()
			}
			return nil
		})
		pool.Close()
		spool.Close()
		var stopped *StoppedError
		if !errors.As(runErr, &stopped) {
			t.Errorf("%s: Run returned %v, want a StoppedError", name, runErr)
		}
		conn, err := pgx.Connect(ctx, dbURL)
		if err != nil {
			t.Fatal(err)
		}
		written := map[string]bool{}
		rows, err := conn.Query(ctx, "SELECT arn FROM executions")
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var a string
			_ = rows.Scan(&a)
			written[a] = true
		}
		conn.Close(ctx)
		gone, deletedGone := 0, 0
		for key, arn := range arns {
			o, reached := lines[key]
			_, statErr := local.Stat(ctx, key)
			inPlace := statErr == nil
			switch {
			case !reached && !inPlace:
				t.Errorf("%s: %s never reached, yet gone", name, key)
			case reached && o.Action == "left" && !inPlace:
				t.Errorf("%s: %s reported left, yet gone", name, key)
			case reached && o.Action == "deleted" && !inPlace:
				deletedGone++
				if arn != "" && !written[arn] {
					t.Errorf("%s: %s deleted, its execution %s not in the database", name, key, arn)
				}
			case reached && o.Action == "deleted" && inPlace:
				t.Errorf("%s: %s reported deleted, still in place (no delete failed)", name, key)
			}
			if !inPlace {
				gone++
			}
		}
		s := r.Sum
		if s.Deleted != deletedGone {
			t.Errorf("%s: summary says %d deleted, %d objects reported deleted are gone", name, s.Deleted, deletedGone)
		}
		if s.Processed+s.Left+s.NotProcessed != s.Selected {
			t.Errorf("%s: counts do not add up: %+v", name, s)
		}
		if s.Left+s.NotProcessed == 0 || deletedGone == 0 {
			t.Errorf("%s: the cut stopped nothing, or nothing was written before it: %+v", name, s)
		}
		t.Logf("%s: %d gone, %d deleted, %d left, %d not processed, %d moved", name, gone, s.Deleted, s.Left, s.NotProcessed, s.Moved)
	}
}
