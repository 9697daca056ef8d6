package cumulusdb_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/cumulusdb"
	"github.com/deadletter/deadletter/internal/recovery"
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

// A message whose execution's notification is refused (a record SNS
// cannot take, over 256 KiB) fails before its PDR is written, as in v21,
// which publishes the execution before it returns it: with notifications
// the PDR is not sent with the execution, however known its provider.
func TestAPdrIsNotWrittenWhenItsExecutionsNotificationIsRefused(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	dbURL, _, pool := oneConnectionViaProxy(t, []byte(writersSeed))
	n := &testsupport.RecordingNotifier{}
	w := &recovery.Writer{DB: testsupport.CumulusDB(t, pool), Now: func() time.Time { return now }, Notifier: n}
	withPdr := func(m gjson.Result, name string) gjson.Result {
		return gjson.Parse(strings.Replace(m.Raw, `"payload":{`, `"payload":{"pdr":{"name":"`+name+`"},"running":[],"completed":["x"],"failed":[],`, 1))
	}
	// The provider is known from here on (no query needed to build a PDR).
	if _, err := w.Write(ctx, withPdr(message("e1", "completed", 2000, ""), "PDR1")); err != nil {
		t.Fatal(err)
	}
	n.Fail = map[recovery.Topic]error{recovery.TopicExecution: fmt.Errorf("too large: %w", recovery.ErrNotificationRejected)}
	if _, err := w.Write(ctx, withPdr(message("e6", "completed", 3000, ""), "PDR6")); err == nil {
		t.Fatal("the message whose execution notification was refused did not fail")
	}
	if got := testsupport.QueryInt(t, dbURL, `SELECT count(*) FROM pdrs WHERE name = 'PDR6'`); got != 0 {
		t.Fatalf("%d PDR6 rows after its execution's notification was refused, want none", got)
	}
}

// The refusal is told by its SQLSTATE alone: a server whose lc_messages
// is not English words the cast's failure in its own language.
func TestThePdrsRefusalIsToldByItsSQLSTATENotItsWords(t *testing.T) {
	for _, msg := range []string{`invalid input syntax for type bigint: "the execution before it was not written"`,
		`ungültige Eingabesyntax für Typ bigint: »the execution before it was not written«`, `bigint 型の入力構文が不正です`} {
		if !cumulusdb.ExecutionNotWritten(&pgconn.PgError{Code: "22P02", Message: msg}) {
			t.Errorf("22P02 %q is not taken for the refusal", msg)
		}
	}
	if cumulusdb.ExecutionNotWritten(&pgconn.PgError{Code: "23502", Message: "the execution before it was not written"}) {
		t.Error("a NOT NULL violation is taken for the refusal")
	}
}
