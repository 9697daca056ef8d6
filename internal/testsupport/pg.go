package testsupport

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/deadletter/deadletter/internal/cumulusdb"
)

// EnvDatabaseURL names the test PostgreSQL server (an admin connection to
// its postgres database), set by scripts/services.sh.
const EnvDatabaseURL = "DEADLETTER_TEST_DATABASE_URL"

// EnvPGCtl is the pg_ctl command line of the test cluster (for fault tests
// that stop and start it).
const EnvPGCtl = "DEADLETTER_TEST_PG_CTL"

// DatabaseURL returns the admin URL of the test PostgreSQL server.
func DatabaseURL(t testing.TB) string {
	t.Helper()
	noteDatabaseTest(t, "server")
	return need(t, EnvDatabaseURL, "PostgreSQL")
}

// NewDatabase creates an empty database for one test, dropped afterwards,
// and returns its URL.
func NewDatabase(t testing.TB) string {
	t.Helper()
	return newDatabaseFrom(t, DatabaseURL(t), "")
}

// newDatabaseFrom creates a database for one test on the server at admin,
// a copy of template ("": an empty one), dropped afterwards, and returns
// its URL.
func newDatabaseFrom(t testing.TB, admin, template string) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		missing(t, "PostgreSQL at "+admin+": "+err.Error())
	}
	defer conn.Close(ctx)
	name := "dl_" + strings.ToLower(RandomHex(6))
	create := "CREATE DATABASE " + name
	if template != "" {
		create += " TEMPLATE " + template
		major, _, _ := strings.Cut(conn.PgConn().ParameterStatus("server_version"), ".")
		if v, _ := strconv.Atoi(major); v >= 15 {
			// Files copied, where the default (WAL_LOG, since 15) writes
			// every page of the template to the WAL: half the server's CPU
			// a copy (measured: 37 ms against 79 ms for v22.3's 11 MB).
			create += " STRATEGY FILE_COPY"
		}
	}
	if _, err := conn.Exec(ctx, create); err != nil {
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), admin)
		if err != nil {
			return
		}
		defer c.Close(context.Background())
		_, _ = c.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	})
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

// EnvCumulus names the Cumulus schema generation the tests' databases are
// built with (v21, v22.0, v22.2, v22.3 or v22); v21 when unset. scripts/test
// runs the database tests once per generation.
const EnvCumulus = "DEADLETTER_TEST_CUMULUS"

// Generation is the schema generation of the tests' Cumulus databases.
func Generation(t testing.TB) cumulusdb.Generation {
	t.Helper()
	noteDatabaseTest(t, "generation")
	v := os.Getenv(EnvCumulus)
	if v == "" {
		return cumulusdb.V21
	}
	g, err := cumulusdb.ParseGeneration(v)
	if err != nil {
		t.Fatalf("%s: %v", EnvCumulus, err)
	}
	return g
}

// CumulusDB is the write adapter for a test database made by
// NewCumulusDatabase.
func CumulusDB(t testing.TB, pool *pgxpool.Pool) *cumulusdb.DB {
	return cumulusdb.NewFor(pool, Generation(t))
}

// NewCumulusDatabase creates a database for one test with the Cumulus
// tables of the generation under test (Generation) and, unless seed is nil, the reference rows of a seed file's JSON
// (collections, providers, async operations, parent executions).
func NewCumulusDatabase(t testing.TB, seed []byte) string {
	t.Helper()
	return NewCumulusDatabaseOf(t, Generation(t), seed)
}

// NewCumulusDatabaseOf is NewCumulusDatabase of a given generation, for
// tests of one generation's own rules. Its executions have a partition
// for each quarter of 2024 and 2025 on v22.
func NewCumulusDatabaseOf(t testing.TB, gen cumulusdb.Generation, seed []byte) string {
	t.Helper()
	admin := DatabaseURL(t)
	dbURL := newDatabaseFrom(t, admin, cumulusTemplate(t, admin, gen))
	if seed != nil {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, dbURL)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		s, err := cumulusdb.ParseSeed(seed)
		if err != nil {
			t.Fatal(err)
		}
		if err := cumulusdb.ApplySeed(ctx, conn, s, ""); err != nil {
			t.Fatal(err)
		}
	}
	return dbURL
}

// ExecutionWritten reports whether the database holds the execution whose
// ARN ends in ":"+name, once.
func ExecutionWritten(t testing.TB, dbURL, name string) bool {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM executions WHERE arn LIKE '%:' || $1`, name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n == 1
}

// EnvDatabaseURLGerman names a test PostgreSQL server that has its
// messages in German (Debian's PostgreSQL 15 and the de_DE.UTF-8 locale,
// set up by scripts/services.sh).
const EnvDatabaseURLGerman = "DEADLETTER_TEST_DATABASE_URL_DE"

// NewGermanCumulusDatabase is NewCumulusDatabaseOf on the German server,
// with lc_messages = de_DE.UTF-8 for every session of the database (as a
// server configured in German would be). It fails (or skips, when the
// services are not required) unless the server really answers in German.
func NewGermanCumulusDatabase(t testing.TB, gen cumulusdb.Generation, seed []byte) string {
	t.Helper()
	t.Setenv(EnvDatabaseURL, need(t, EnvDatabaseURLGerman, "PostgreSQL with German messages"))
	dbURL := NewCumulusDatabaseOf(t, gen, seed)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(dbURL)
	if _, err := conn.Exec(ctx, "ALTER DATABASE "+pgx.Identifier{strings.TrimPrefix(u.Path, "/")}.Sanitize()+" SET lc_messages = 'de_DE.UTF-8'"); err != nil {
		conn.Close(ctx)
		missing(t, "PostgreSQL at "+dbURL+" cannot answer in German (scripts/services.sh makes the de_DE.UTF-8 locale before it starts the server): "+err.Error())
	}
	conn.Close(ctx)
	conn, err = pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "SELECT 1/0")
	if err == nil || !strings.Contains(err.Error(), "Division durch Null") {
		missing(t, "PostgreSQL at "+dbURL+" does not answer in German (its package has no translations?): "+fmt.Sprint(err))
	}
	return dbURL
}

// ExecSQL runs each statement on its own connection to dbURL, failing the
// test on an error.
func ExecSQL(t testing.TB, dbURL string, stmts ...string) {
	t.Helper()
	if err := ExecSQLErr(dbURL, stmts...); err != nil {
		t.Fatal(err)
	}
}

// ExecSQLErr is ExecSQL returning its error, for a goroutine that is not
// the test's (where t.Fatal would end that goroutine, not the test).
func ExecSQLErr(dbURL string, stmts ...string) error {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	for _, s := range stmts {
		if _, err := conn.Exec(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	return nil
}

// QueryInt is the one integer a query of dbURL answers (a count), or the
// test's end.
func QueryInt(t testing.TB, dbURL, query string) int {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(context.Background(), query).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// GoldenFor is the golden file of a test whose output depends on the
// Cumulus generation under test (v22's error texts and columns differ):
// path as it is for v21, else with the generation before ".golden"
// (testdata/x.golden.gz → testdata/x.v22.3.golden.gz).
func GoldenFor(t testing.TB, path string) string {
	t.Helper()
	g := Generation(t)
	if g == cumulusdb.V21 {
		return path
	}
	i := strings.Index(path, ".golden")
	if i < 0 {
		return path + "." + string(g)
	}
	return path[:i] + "." + string(g) + path[i:]
}
