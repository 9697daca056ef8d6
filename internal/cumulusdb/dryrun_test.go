package cumulusdb_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/deadletter/deadletter/internal/testsupport"
)

// sharedGranules are n granules with distinct ids that all list the same
// file, and n more listings of one granule id: rows every granule of the
// message rewrites.
func sharedGranules(n int) []string {
	gs := make([]string, 0, 2*n)
	for i := range n {
		gs = append(gs, granule(fmt.Sprintf("G%06d", i), file("b", "shared", 5)))
	}
	for i := range n {
		gs = append(gs, granule("Gsame", file("b", fmt.Sprintf("k%06d", i), 5)))
	}
	return gs
}

// dryRunIndexReads writes a message of sharedGranules(n) inside a dry
// run's transaction and returns the index entries PostgreSQL read on the
// granules and files tables in that transaction (its own statistics
// counters, which count work, not time).
func dryRunIndexReads(t *testing.T, n int) int64 {
	t.Helper()
	pool, w := newDB(t)
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	w.DB = testsupport.CumulusDB(t, pool).InTx(tx)
	res, err := w.Write(ctx, message("e1", "completed", 1000, "", sharedGranules(n)...))
	if err != nil {
		t.Fatal(err)
	}
	written := 0
	for _, g := range res.Granules {
		if g.Outcome == "written" {
			written++
		}
	}
	if written != 2*n {
		t.Fatalf("%d of %d granules written: %+v", written, 2*n, res.Granules[:3])
	}
	var reads int64
	if err := tx.QueryRow(ctx, `SELECT sum(pg_stat_get_xact_tuples_returned(indexrelid))::bigint FROM pg_index
WHERE indrelid IN ('granules'::regclass, 'files'::regclass)
  OR indrelid IN (SELECT relid FROM pg_partition_tree('granules') UNION ALL SELECT relid FROM pg_partition_tree('files'))`).Scan(&reads); err != nil {
		t.Fatal(err)
	}
	return reads
}

// The dry run writes each message in one transaction. A row every granule
// rewrites must not gain a version per granule there: each rewrite would
// read all the earlier versions, and the dry run was quadratic in the
// granules per message (4,000 granules: 46.7 s, against 6.3 s for the real
// run). The work per granule must not grow with the granules.
func TestDryRunWorkPerGranuleIsConstant(t *testing.T) {
	small, large := 50, 200
	a, b := dryRunIndexReads(t, small), dryRunIndexReads(t, large)
	perA, perB := float64(a)/float64(2*small), float64(b)/float64(2*large)
	t.Logf("index entries read per granule: %.1f at %d granules, %.1f at %d", perA, 2*small, perB, 2*large)
	if perA == 0 {
		t.Fatal("no index reads counted: the statistics counters do not see the writes")
	}
	if perB > perA*1.25+1 {
		t.Errorf("index entries read per granule grew from %.1f (%d granules) to %.1f (%d granules): quadratic", perA, 2*small, perB, 2*large)
	}
}
