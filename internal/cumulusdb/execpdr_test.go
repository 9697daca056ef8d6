package cumulusdb_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/deadletter/deadletter/internal/cumulusdb"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// The PDR statement sent with its execution writes nothing unless the
// execution's statement, on the same connection, set this call's token:
// not when nothing was set (the execution failed, its setting undone with
// its transaction), and not when another call's token is there (a pooler
// that ran the two on different server connections, another message's
// execution). It then fails with the refusal that has the PDR written
// after the execution, as before, and no row is left.
func TestThePdrSentWithItsExecutionRefusesAnotherCallsExecution(t *testing.T) {
	ctx := context.Background()
	dbURL := testsupport.NewCumulusDatabase(t, []byte(writersSeed))
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var collection, provider int64
	if err := conn.QueryRow(ctx, `SELECT (SELECT cumulus_id FROM collections LIMIT 1), (SELECT cumulus_id FROM providers LIMIT 1)`).Scan(&collection, &provider); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	sql := cumulusdb.PdrAfterExecutionSQL(testsupport.Generation(t))
	for _, setting := range []string{"", "another-call 1"} {
		if setting != "" {
			if _, err := conn.Exec(ctx, `SELECT set_config('deadletter.execution', $1, false)`, setting); err != nil {
				t.Fatal(err)
			}
		}
		status := "completed"
		_, err := conn.Exec(ctx, sql, "PDR-X", &status, false, "N/A", `{}`, 100.0, "this-call",
			collection, provider, now, now, now, 1.0)
		if !cumulusdb.ExecutionNotWritten(err) {
			t.Fatalf("setting %q: error %v, want the refusal", setting, err)
		}
	}
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pdrs WHERE name = 'PDR-X'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d PDRs left (%v)", n, err)
	}
}
