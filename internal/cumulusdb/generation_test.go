package cumulusdb_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/deadletter/deadletter/internal/cumulusdb"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// schemaDB creates a database with generation gen's DDL and returns a
// pool on it.
func schemaDB(t *testing.T, gen cumulusdb.Generation) *pgxpool.Pool {
	t.Helper()
	url := testsupport.NewDatabase(t)
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if err := cumulusdb.InitSchema(ctx, pool, gen, 2026); err != nil {
		t.Fatalf("%s DDL: %v", gen, err)
	}
	return pool
}

// Every generation the project builds is the one Detect reads back from
// the catalog, and Open finds it writable.
func TestDetectReadsEachGenerationFromTheCatalog(t *testing.T) {
	ctx := context.Background()
	for _, gen := range cumulusdb.Generations {
		t.Run(string(gen), func(t *testing.T) {
			pool := schemaDB(t, gen)
			got, err := cumulusdb.Detect(ctx, pool)
			if err != nil || got != gen {
				t.Fatalf("Detect: %q, %v; want %q", got, err, gen)
			}
			if err := cumulusdb.CheckWritable(ctx, pool, gen, "test"); err != nil {
				t.Fatalf("CheckWritable: %v", err)
			}
		})
	}
}

// A v22 deploy provisions one executions partition per quarter of its
// year and the next, and the default partition.
func TestV22ExecutionsHaveQuarterlyAndDefaultPartitions(t *testing.T) {
	pool := schemaDB(t, cumulusdb.V22_3)
	var parts []string
	if err := pool.QueryRow(context.Background(), `SELECT array_agg(c.relname::text ORDER BY c.relname) FROM pg_inherits i
JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'executions'::regclass`).Scan(&parts); err != nil {
		t.Fatal(err)
	}
	want := "executions_2026_q1 executions_2026_q2 executions_2026_q3 executions_2026_q4 executions_2027_q1 executions_2027_q2 executions_2027_q3 executions_2027_q4 executions_default"
	if got := strings.Join(parts, " "); got != want {
		t.Fatalf("partitions %s\nwant %s", got, want)
	}
	for _, table := range []string{"granules", "files"} {
		var n int
		if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_inherits WHERE inhparent = $1::regclass`, table).Scan(&n); err != nil || n != 8 {
			t.Fatalf("%s: %d partitions (%v), want 8", table, n, err)
		}
	}
}

// A database that is no generation, or half of two, is refused with what
// was found and what was expected.
func TestDetectRefusesUnknownAndHalfMigratedSchemas(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name  string
		gen   cumulusdb.Generation
		alter string
		want  string
	}{
		{"empty database", "", "", "no table collections, providers, async_operations, executions, pdrs, granules, files, granules_executions"},
		{"v21 missing a migration", cumulusdb.V21, `ALTER TABLE granules DROP COLUMN producer_granule_id`, "Cumulus v21 tables without column granules.producer_granule_id"},
		{"v21 without a table", cumulusdb.V21, `DROP TABLE granules_executions`, "no table granules_executions"},
		{"v22 without its guard tables", cumulusdb.V22_3, `DROP TABLE executions_global_unique CASCADE`, "half-migrated schema (partitioned executions, granules, files; guard tables granules_global_unique, files_global_unique; no executions_global_unique)"},
		{"v22 missing a partition key column", cumulusdb.V22_3, `ALTER TABLE files DROP COLUMN collection_cumulus_id CASCADE`, "Cumulus v22 tables without column files.collection_cumulus_id"},
		// A damaged v22 is refused, not guessed as an older generation.
		{"v22.2 without its granule and file guard triggers", cumulusdb.V22_2, `DROP TRIGGER granules_enforce_unique_granule_id_trigger_delete ON granules;
DROP TRIGGER granules_enforce_unique_granule_id_trigger_insert ON granules;
DROP TRIGGER granules_enforce_unique_granule_id_trigger_update ON granules;
DROP TRIGGER files_enforce_unique_bucket_key_trigger ON files`,
			"Cumulus v22.0 tables without their guard trigger files.files_enforce_unique_bucket_key_trigger (files_enforce_global_uniqueness), granules.granules_enforce_unique_granule_id_trigger (granules_enforce_global_uniqueness)"},
		{"v22.2 with one granule trigger dropped", cumulusdb.V22_2, `DROP TRIGGER granules_enforce_unique_granule_id_trigger_insert ON granules`,
			"Cumulus v22.2 tables without their guard trigger granules.granules_enforce_unique_granule_id_trigger_insert (granules_enforce_global_uniqueness_insert)"},
		{"v22.3 with a trigger disabled", cumulusdb.V22_3, `ALTER TABLE executions DISABLE TRIGGER executions_enforce_unique_arn_url_trigger_insert`,
			"Cumulus v22.3 tables without their guard trigger executions.executions_enforce_unique_arn_url_trigger_insert (executions_enforce_global_uniqueness_insert) (dropped or disabled)"},
		// A trigger that exists and is not disabled but does not fire in
		// dla's sessions: enabled for replication only (it fires only
		// under session_replication_role = replica), or whose clone is
		// disabled on one partition (the rows routed there skip it).
		{"v22.3 with a trigger enabled for replicas only", cumulusdb.V22_3, `ALTER TABLE granules ENABLE REPLICA TRIGGER granules_enforce_unique_granule_id_trigger_insert`,
			"Cumulus v22.3 tables without their guard trigger granules.granules_enforce_unique_granule_id_trigger_insert (granules_enforce_global_uniqueness_insert) (dropped or disabled)"},
		{"v22.2 with a trigger disabled on one partition", cumulusdb.V22_2, `ALTER TABLE files_p3 DISABLE TRIGGER files_enforce_unique_bucket_key_trigger`,
			"Cumulus v22.2 tables without their guard trigger files.files_enforce_unique_bucket_key_trigger (files_enforce_global_uniqueness) (dropped or disabled)"},
		{"v22.0 without its execution trigger's function", cumulusdb.V22, `DROP FUNCTION executions_enforce_global_uniqueness() CASCADE`,
			"Cumulus v22.0 tables without their guard trigger executions.executions_enforce_unique_arn_url_trigger (executions_enforce_global_uniqueness)"},
		{"v21 with a guard table", cumulusdb.V21, `CREATE TABLE granules_global_unique (granule_id text PRIMARY KEY)`, "half-migrated schema (unpartitioned executions, granules, files; guard tables granules_global_unique"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var pool *pgxpool.Pool
			if c.gen == "" {
				var err error
				if pool, err = pgxpool.New(ctx, testsupport.NewDatabase(t)); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(pool.Close)
			} else {
				pool = schemaDB(t, c.gen)
				if _, err := pool.Exec(ctx, c.alter); err != nil {
					t.Fatal(err)
				}
			}
			gen, err := cumulusdb.Detect(ctx, pool)
			var se *cumulusdb.SchemaError
			if !errors.As(err, &se) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Detect: %q, %v\nwant a SchemaError with %q", gen, err, c.want)
			}
		})
	}
}

// Open refuses, before any write, a database that is read-only (what an
// Aurora failover looks like) or a role without the privileges the
// writes need, guard tables included on v22.
func TestOpenRefusesADatabaseThatCannotTakeTheWrites(t *testing.T) {
	ctx := context.Background()
	gen := testsupport.Generation(t)
	t.Run("read-only", func(t *testing.T) {
		url := testsupport.NewCumulusDatabase(t, nil)
		cfg, _ := pgxpool.ParseConfig(url)
		if _, err := pgxExec(ctx, url, `ALTER DATABASE `+cfg.ConnConfig.Database+` SET default_transaction_read_only = on`); err != nil {
			t.Fatal(err)
		}
		_, err := cumulusdb.Open(ctx, cfg)
		var nw *cumulusdb.NotWritableError
		if !errors.As(err, &nw) || !strings.Contains(err.Error(), "read-only") {
			t.Fatalf("Open: %v, want a NotWritableError saying read-only", err)
		}
	})
	t.Run("no privileges", func(t *testing.T) {
		url := testsupport.NewCumulusDatabase(t, nil)
		role := "dl_narrow_" + strings.ToLower(testsupport.RandomHex(4))
		setup := `CREATE ROLE ` + role + ` LOGIN; GRANT SELECT, INSERT, UPDATE ON ALL TABLES IN SCHEMA public TO ` + role + `;
REVOKE INSERT ON granules_executions FROM ` + role + `;`
		if _, err := pgxExec(ctx, url, setup); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_, _ = pgxExec(ctx, url, `REASSIGN OWNED BY `+role+` TO postgres; DROP OWNED BY `+role)
			_, _ = pgxExec(ctx, testsupport.DatabaseURL(t), `DROP ROLE IF EXISTS `+role)
		})
		cfg, _ := pgxpool.ParseConfig(url)
		cfg.ConnConfig.User = role
		_, err := cumulusdb.Open(ctx, cfg)
		var nw *cumulusdb.NotWritableError
		if !errors.As(err, &nw) {
			t.Fatalf("Open: %v, want a NotWritableError", err)
		}
		for _, want := range []string{"INSERT on granules_executions", "DELETE on files", "USAGE on public.executions_cumulus_id_seq"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%v\nlacks %q", err, want)
			}
		}
		if gen.Partitioned() && !strings.Contains(err.Error(), "DELETE on granules_global_unique") {
			t.Errorf("%v\nlacks the guard tables", err)
		}
	})
}

func pgxExec(ctx context.Context, url, sql string) (string, error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	tag, err := conn.Exec(ctx, sql)
	return tag.String(), err
}
