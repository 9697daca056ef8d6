package cumulusdb_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/deadletter/deadletter/internal/cumulusdb"
	"github.com/deadletter/deadletter/internal/recovery"
	"github.com/deadletter/deadletter/internal/testsupport"
)

const feb2023 = int64(1675209600000) // 2023-02-01: no partition in the tests' databases but the default

// openDB opens dbURL as dla recover does (cumulusdb.Open: the schema's
// fingerprint taken) and returns its writer.
func openDB(t *testing.T, dbURL string) (*cumulusdb.Database, *recovery.Writer) {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	db, err := cumulusdb.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return db, &recovery.Writer{DB: db.DB()}
}

// On a server whose messages are German, a row no partition takes is
// still the environment's (decided from SQLSTATE 23514 naming no
// constraint, on a partitioned table), and the stop line names the table,
// the created_at and the quarter that needs a partition.
func TestAMissingPartitionOnAGermanServerIsTheEnvironments(t *testing.T) {
	for _, gen := range []cumulusdb.Generation{cumulusdb.V22, cumulusdb.V22_3} {
		t.Run(string(gen), func(t *testing.T) {
			dbURL := testsupport.NewGermanCumulusDatabase(t, gen, []byte(writersSeed))
			db, w := openDB(t, dbURL)
			if _, err := db.Pool.Exec(context.Background(), `ALTER TABLE executions DETACH PARTITION executions_default`); err != nil {
				t.Fatal(err)
			}
			_, err := w.Write(context.Background(), message("e1", "completed", feb2023, "", granule("G1", "")))
			if !recovery.IsTransient(err) {
				t.Fatalf("a missing partition on a German server is the message's: %v", err)
			}
			for _, want := range []string{"no partition of executions takes this row", "created_at 2023-02-01", "quarter 2023 Q1",
				"CREATE TABLE executions_2023_q1 PARTITION OF executions FOR VALUES FROM ('2023-01-01') TO ('2023-04-01')", "keine Partition"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the stop line lacks %q: %v", want, err)
				}
			}
			if n := queryString(t, db.Pool, `SELECT count(*)::text FROM executions`); n != "0" {
				t.Errorf("%s executions written", n)
			}
		})
	}
}

// On a German server too, a NOT NULL column of files that no write fills
// is the environment's, and one they fill is the message's.
func TestANotNullViolationOnAGermanServerIsJudgedByTableAndColumn(t *testing.T) {
	dbURL := testsupport.NewGermanCumulusDatabase(t, cumulusdb.V22_2, []byte(writersSeed))
	_, w := openDB(t, dbURL)
	ctx := context.Background()
	// A file without a key: the message's (v22 writes a granule's files in
	// one transaction; the granule is marked failed, as Cumulus does).
	res, err := w.Write(ctx, message("e2", "completed", feb2024, "", granule("G2", `{"bucket":"b","fileName":"f"}`)))
	if err != nil || res == nil || len(res.Granules) != 1 || !strings.Contains(res.Granules[0].FilesError, "23502") {
		t.Fatalf("a file without a key: %+v, %v", res, err)
	}
}

// A session ended by pg_terminate_backend (or a failover) says that an
// administrator or a failover ended it, not that the server is shutting
// down.
func TestATerminatedSessionSaysAnAdministratorOrAFailoverEndedIt(t *testing.T) {
	pool := schemaDB(t, testsupport.Generation(t))
	ctx := context.Background()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	var pid int
	if err := conn.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	other, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Exec(ctx, `SELECT pg_terminate_backend($1)`, pid); err != nil {
		t.Fatal(err)
	}
	other.Release()
	_, err = conn.Exec(ctx, `SELECT 1`)
	line, ok := cumulusdb.Explain(err)
	if !ok || !strings.Contains(line, "57P01") || !strings.Contains(line, "an administrator or a failover ended the session") {
		t.Fatalf("Explain(%v) = %q, %v", err, line, ok)
	}
}
