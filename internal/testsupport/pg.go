package testsupport

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/deadletter/deadletter/internal/cumulusdb"
)

// EnvDatabaseURL names the test PostgreSQL server (an admin connection to
// its postgres database), set by scripts/services.sh.
const EnvDatabaseURL = "DEADLETTER_TEST_DATABASE_URL"

// EnvPGCtl is the pg_ctl command line of the test cluster (for fault tests
// that stop and start it).
const EnvPGCtl = "DEADLETTER_TEST_PG_CTL"

// DatabaseURL returns the admin URL of the test PostgreSQL server.
func DatabaseURL(t testing.TB) string { return need(t, EnvDatabaseURL, "PostgreSQL") }

// NewDatabase creates an empty database for one test, dropped afterwards,
// and returns its URL.
func NewDatabase(t testing.TB) string {
	t.Helper()
	admin := DatabaseURL(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		missing(t, "PostgreSQL at "+admin+": "+err.Error())
	}
	defer conn.Close(ctx)
	name := "dl_" + strings.ToLower(RandomHex(6))
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
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

// NewCumulusDatabase creates a database for one test with the Cumulus v21
// tables and, unless seed is nil, the reference rows of a seed file's JSON
// (collections, providers, async operations, parent executions).
func NewCumulusDatabase(t testing.TB, seed []byte) string {
	t.Helper()
	dbURL := NewDatabase(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if err := cumulusdb.InitSchema(ctx, conn); err != nil {
		t.Fatal(err)
	}
	if seed != nil {
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
