package cumulusdb

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/deadletter/deadletter/internal/recovery"
)

// TestUniqueViolationRaceIsRetried: a unique violation (another writer
// inserted the same row between the ON CONFLICT check and the insert) is
// retried, so a race never fails a message; one that persists is the
// message's own failure, reported with its SQLSTATE and not as transient.
func TestUniqueViolationRaceIsRetried(t *testing.T) {
	ctx := context.Background()
	d := newDB(nil, false, V21)
	failing := func(code string, times int, calls *int) func(querier) error {
		return func(querier) error {
			*calls++
			if *calls <= times {
				return &pgconn.PgError{Code: code, Message: "duplicate key value violates unique constraint \"executions_url_unique\""}
			}
			return nil
		}
	}
	calls := 0
	if err := d.one(ctx, failing("23505", 2, &calls)); err != nil || calls != 3 {
		t.Errorf("a race that clears: err %v after %d calls, want nil after 3", err, calls)
	}
	calls = 0
	err := d.one(ctx, failing("23505", 100, &calls))
	if err == nil || !strings.Contains(err.Error(), "23505") || recovery.IsTransient(err) || calls != conflictRetries+1 {
		t.Errorf("a lasting violation: err %v after %d calls, want a 23505 failure after %d", err, calls, conflictRetries+1)
	}
	calls = 0
	if err := d.one(ctx, failing("23503", 100, &calls)); err == nil || calls != 1 {
		t.Errorf("a foreign key violation: err %v after %d calls, want one call", err, calls)
	}
}
