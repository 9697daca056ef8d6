package cumulusdb_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/deadletter/deadletter/internal/cumulusdb"
	"github.com/deadletter/deadletter/internal/recovery"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// A database error is the message's only when it says something about the
// data; anything about the database, its schema or its configuration is
// the environment's: the run stops (transient) and nothing is moved.
func TestClassifyTellsTheMessagesErrorsFromTheEnvironments(t *testing.T) {
	for _, c := range []struct {
		code, msg                 string
		table, column, constraint string
		transient                 bool
		line                      string
	}{
		{"25006", "cannot execute INSERT in a read-only transaction", "", "", "", true, "read-only"},
		{"42501", "permission denied for table executions", "", "", "", true, "docs/permissions.md"},
		{"42P10", "there is no unique or exclusion constraint matching the ON CONFLICT specification", "", "", "", true, "not the generation detected"},
		{"42P01", `relation "granules" does not exist`, "", "", "", true, "missing"},
		{"42703", `column "parent_created_at" does not exist`, "", "", "", true, "fully migrated"},
		{"57P01", "terminating connection due to administrator command", "", "", "", true, "an administrator or a failover ended the session"},
		{"53300", "sorry, too many clients already", "", "", "", true, "connection slot"},
		{"23514", `no partition of relation "executions" found for row`, "executions", "", "", true, "no partition of executions takes this row"},
		// The same in German: decided by the fields, never the words.
		{"23514", "keine Partition von Relation »executions« für die Zeile gefunden", "executions", "", "", true, "no partition of executions takes this row"},
		{"0A000", "cannot use ON CONFLICT on a partitioned table", "", "", "", true, "PostgreSQL:"},
		// A NOT NULL column of a table the writes fill, which they do not
		// (its default dropped, or added after the run began).
		{"23502", `null value in column "updated_at" of relation "files" violates not-null constraint`, "files", "updated_at", "", true, "PostgreSQL:"},
		{"23502", `Null-Wert in Spalte »status« von Relation »files« verletzt Not-Null-Constraint`, "files", "status", "", true, "PostgreSQL:"},
		{"23502", `null value in column "created_at" of relation "granules_executions" violates not-null constraint`, "granules_executions", "created_at", "", true, "PostgreSQL:"},
		// A table the writes never fill (someone's audit trigger).
		{"23502", `null value in column "who" of relation "audit" violates not-null constraint`, "audit", "who", "", true, "PostgreSQL:"},
		{"23505", `duplicate key value violates unique constraint "granules_global_unique_pkey"`, "granules_global_unique", "", "granules_global_unique_pkey", false, ""},
		{"23502", `null value in column "key" of relation "files" violates not-null constraint`, "files", "key", "", false, ""},
		{"23502", `null value in column "key" of relation "files" violates not-null constraint`, "", "key", "", false, ""},
		{"23514", `new row for relation "granules" violates check constraint "granules_status_check"`, "granules", "", "granules_status_check", false, ""},
		{"22P02", `invalid input syntax for type json`, "", "", "", false, ""},
		{"P0001", "UPDATE affected 0 rows (expected: 1)", "", "", "", false, ""},
	} {
		err := cumulusdb.Classify(&pgconn.PgError{Code: c.code, Message: c.msg, TableName: c.table, ColumnName: c.column, ConstraintName: c.constraint})
		if recovery.IsTransient(err) != c.transient {
			t.Errorf("%s %s: transient %v, want %v (%v)", c.code, c.msg, recovery.IsTransient(err), c.transient, err)
			continue
		}
		if !c.transient {
			if want := c.msg + " (SQLSTATE " + c.code + ")"; err.Error() != want {
				t.Errorf("%s: %q, want %q", c.code, err.Error(), want)
			}
			continue
		}
		if !strings.Contains(err.Error(), c.line) || !strings.Contains(err.Error(), c.code) {
			t.Errorf("%s: %q lacks %q", c.code, err.Error(), c.line)
		}
	}
	if err := cumulusdb.Classify(context.DeadlineExceeded); !recovery.IsTransient(err) {
		t.Errorf("a timeout: %v is not transient", err)
	}
}

// A database that cannot be reached, or that refuses the login, gets one
// line that names PostgreSQL, the host and the database, with the cause
// that matters (never pgx's TLS fallback attempt first), not the AWS
// explainer's "check --endpoint-url".
func TestConnectFailuresNamePostgreSQLTheHostAndTheDatabase(t *testing.T) {
	ctx := context.Background()
	admin := testsupport.DatabaseURL(t)
	cfg, err := pgxpool.ParseConfig(admin)
	if err != nil {
		t.Fatal(err)
	}
	host := cfg.ConnConfig.Host
	for _, c := range []struct {
		name, url string
		want      []string
	}{
		{"closed port", "postgres://x@127.0.0.1:1/db?connect_timeout=5", []string{"cannot connect to PostgreSQL at 127.0.0.1:1, database \"db\"", "connection refused", "PGPORT"}},
		{"unresolvable host", "postgres://x@no-such-host.invalid:5432/db?connect_timeout=5", []string{"PostgreSQL at no-such-host.invalid:5432", "does not resolve"}},
		{"no such database", strings.Replace(admin, "/postgres?", "/no_such_db?", 1) + "&sslmode=prefer", []string{"PostgreSQL at " + host, `database "no_such_db"`, "does not exist (SQLSTATE 3D000)"}},
		{"no such role", strings.Replace(admin, "postgres@", "no_such_role@", 1), []string{"PostgreSQL at " + host, `user "no_such_role"`, "SQLSTATE 28000"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := pgxpool.ParseConfig(c.url)
			if err != nil {
				t.Fatal(err)
			}
			_, err = cumulusdb.Open(ctx, cfg)
			if err == nil {
				t.Fatal("Open succeeded")
			}
			line, ok := cumulusdb.Explain(err)
			if !ok {
				t.Fatalf("not explained: %v", err)
			}
			if strings.Contains(line, "\n") || strings.Contains(line, "TLS") || strings.Contains(line, "endpoint-url") {
				t.Errorf("line %q: more than one line, a TLS fallback or the AWS hint", line)
			}
			for _, w := range c.want {
				if !strings.Contains(line, w) {
					t.Errorf("line %q lacks %q", line, w)
				}
			}
		})
	}
}
