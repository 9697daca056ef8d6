package testsupport

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/deadletter/deadletter/internal/cumulusdb"
)

// A test's Cumulus database is a copy of a template database that holds
// the generation's schema (CREATE DATABASE … TEMPLATE), made once per
// server, generation and schema text, instead of the schema's DDL run
// again for every test: tables, partitions, triggers and functions are
// catalog work PostgreSQL does on its own CPU, and with every test doing it
// the servers were the suite's bottleneck.

// templates caches the template made (or found) on each server, by server
// URL and template name.
var templates sync.Map

// cumulusTemplate returns the name of the template database on the server
// at admin holding gen's schema (InitSchema, deployed in 2024), making it
// if it is not there. The name carries a digest of the schema's text, so a
// changed schema never reuses an old template; concurrent test binaries
// make it once (an advisory lock on the server).
func cumulusTemplate(t testing.TB, admin string, gen cumulusdb.Generation) string {
	t.Helper()
	ddl, err := cumulusdb.DDL(gen, 2024)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(ddl))
	name := "dlt_" + strings.NewReplacer(".", "_").Replace(strings.ToLower(string(gen))) + "_" + hex.EncodeToString(sum[:6])
	key := admin + "\x00" + name
	if _, ok := templates.Load(key); ok {
		return name
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		missing(t, "PostgreSQL at "+admin+": "+err.Error())
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock(hashtext($1))", name); err != nil {
		t.Fatalf("template %s: %v", name, err)
	}
	defer conn.Exec(ctx, "SELECT pg_advisory_unlock(hashtext($1))", name) //nolint:errcheck
	var isTemplate *bool                                                  // nil: no such database
	if err := conn.QueryRow(ctx, "SELECT (SELECT datistemplate FROM pg_database WHERE datname = $1)", name).Scan(&isTemplate); err != nil {
		t.Fatalf("template %s: %v", name, err)
	}
	if isTemplate == nil || !*isTemplate {
		// Not there, or renamed by a build that died before marking it.
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Fatalf("template %s: %v", name, err)
		}
		if err := makeTemplate(ctx, conn, admin, name, ddl); err != nil {
			t.Fatalf("template %s: %v", name, err)
		}
	}
	templates.Store(key, true)
	return name
}

// makeTemplate builds the template under a name of its own (a build that
// dies leaves no half template under the real name), then renames it and
// marks it a template.
func makeTemplate(ctx context.Context, conn *pgx.Conn, admin, name, ddl string) error {
	build := name + "_build"
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+build+" WITH (FORCE)"); err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+build); err != nil {
		return err
	}
	u, err := url.Parse(admin)
	if err != nil {
		return err
	}
	u.Path = "/" + build
	c, err := pgx.Connect(ctx, u.String())
	if err != nil {
		return err
	}
	_, err = c.Exec(ctx, ddl)
	c.Close(ctx)
	if err != nil {
		return fmt.Errorf("schema: %w", err)
	}
	if _, err := conn.Exec(ctx, "ALTER DATABASE "+build+" RENAME TO "+name); err != nil {
		return err
	}
	_, err = conn.Exec(ctx, "ALTER DATABASE "+name+" WITH IS_TEMPLATE true")
	return err
}
