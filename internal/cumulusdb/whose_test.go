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

// A neighbour's change that refuses rows without touching the tables
// themselves is a schema change too: a CHECK constraint, a trigger or a
// NOT NULL added to partitions only, a cloned guard trigger disabled on
// one partition, or a function a trigger calls replaced by one that
// raises. Each makes the write fail with a class-23 or P0 error, which
// is the message's on an unchanged schema; here the run must stop with
// the object in place (a TransientError naming what changed), on every
// v22 generation and on a German server. Cumulus's own
// create_future_executions_partitions, run mid-run, is no change: a
// message's own error after it still fails the message.
const (
	onTables      = "the Cumulus schema changed during the run"
	outsideTables = "the database changed during the run outside the Cumulus tables"
)

func TestAChangeToPartitionsOrToAFunctionATriggerCallsStopsTheRun(t *testing.T) {
	ctx := context.Background()
	eachPartition := func(table, stmt string) string {
		return `DO $$ DECLARE p text; BEGIN FOR p IN SELECT relid::regclass::text FROM pg_partition_tree('` + table + `') WHERE isleaf LOOP EXECUTE format('` + stmt + `', p); END LOOP; END $$`
	}
	cases := []struct {
		name, before, change, names string
		// says: "the Cumulus schema changed" for a change to the tables;
		// a function outside them is never called that.
		says string
	}{
		{"a CHECK on granules' partitions", "",
			eachPartition("granules", `ALTER TABLE %s ADD CONSTRAINT no_g1 CHECK (granule_id <> ''G1'')`), "no_g1", onTables},
		{"a NOT VALID CHECK on granules", "",
			`ALTER TABLE granules ADD CONSTRAINT no_g1_yet CHECK (granule_id <> 'G1') NOT VALID`, "constraint granules.no_g1_yet (CHECK ((granule_id <> 'G1'::text)) NOT VALID) is new", onTables},
		{"a NOT NULL on files' partitions", "",
			eachPartition("files", `ALTER TABLE %s ALTER COLUMN checksum_type SET NOT NULL`), "checksum_type", onTables},
		{"a trigger on an executions partition", "",
			`CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $f$ BEGIN RAISE EXCEPTION 'refused'; END $f$;
CREATE TRIGGER refuse BEFORE INSERT OR UPDATE ON executions_2024_q1 FOR EACH ROW EXECUTE FUNCTION refuse()`, "executions_2024_q1.refuse", onTables},
		{"a function a trigger calls replaced",
			`CREATE FUNCTION audit_helper() RETURNS void LANGUAGE sql AS $f$ SELECT $f$;
CREATE FUNCTION audit() RETURNS trigger LANGUAGE plpgsql AS $f$ BEGIN PERFORM audit_helper(); RETURN NEW; END $f$;
CREATE TRIGGER audit BEFORE INSERT OR UPDATE ON granules FOR EACH ROW EXECUTE FUNCTION audit()`,
			`CREATE OR REPLACE FUNCTION audit_helper() RETURNS void LANGUAGE plpgsql AS $f$ BEGIN RAISE EXCEPTION 'refused'; END $f$`,
			"function audit_helper(), which audit() names, was replaced", outsideTables + ", in what the writes run"},
	}
	for _, gen := range []cumulusdb.Generation{cumulusdb.V22, cumulusdb.V22_2, cumulusdb.V22_3, "de"} {
		for _, c := range cases {
			t.Run(string(gen)+"/"+c.name, func(t *testing.T) {
				var dbURL string
				if gen == "de" {
					dbURL = testsupport.NewGermanCumulusDatabase(t, cumulusdb.V22_3, []byte(writersSeed))
				} else {
					dbURL = testsupport.NewCumulusDatabaseOf(t, gen, []byte(writersSeed))
				}
				if c.before != "" {
					if _, err := pgxExec(ctx, dbURL, c.before); err != nil {
						t.Fatal(err)
					}
				}
				db, w := openDB(t, dbURL)
				if _, err := db.Pool.Exec(ctx, c.change); err != nil {
					t.Fatal(err)
				}
				_, err := w.Write(ctx, message("e1", "completed", feb2024, "", granule("G1", file("b", "k1", 1))))
				if !recovery.IsTransient(err) || !strings.HasPrefix(strings.TrimPrefix(err.Error(), "AggregateError: granule G1: "), c.says) || !strings.Contains(err.Error(), c.names) {
					t.Fatalf("a write refused by a change made mid-run was not stopped saying %q, naming %s: %v", c.says, c.names, err)
				}
			})
		}
	}
	t.Run("create_future_executions_partitions", func(t *testing.T) {
		dbURL := testsupport.NewCumulusDatabaseOf(t, cumulusdb.V22_3, []byte(writersSeed))
		db, w := openDB(t, dbURL)
		write(t, w, message("e3", "completed", feb2024, "", granule("G3", file("b", "k3", 1))))
		if _, err := db.Pool.Exec(ctx, `ALTER TABLE executions DETACH PARTITION executions_default`); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Pool.Exec(ctx, `CALL create_future_executions_partitions(3)`); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Pool.Exec(ctx, `ALTER TABLE executions ATTACH PARTITION executions_default DEFAULT`); err != nil {
			t.Fatal(err)
		}
		_, err := w.Write(ctx, inCollection(message("e4", "completed", may2024, "", granule("G3", file("b", "k3", 1))), "D", "2"))
		if recovery.IsTransient(err) || err == nil || !strings.Contains(err.Error(), "in a different collection") {
			t.Fatalf("after Cumulus's own partitions, a granule of another collection is the message's error: %v", err)
		}
	})
}
