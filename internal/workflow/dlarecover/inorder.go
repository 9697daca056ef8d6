package dlarecover

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/deadletter/deadletter/internal/cumulusdb"
	"github.com/deadletter/deadletter/internal/recovery"
	"github.com/deadletter/deadletter/internal/selection"
)

// dryRunInOrder is the dry run of scope's objects one after another, in
// the selection's order, with every write in one transaction rolled back
// at the end: each message is written against the rows the messages
// before it left, as a run writing them in that order finds them (Run's
// dry run writes each in a transaction of its own, against the rows as
// they stand). dla trace judges a record's messages with it.
//
// Inside the transaction each message is a savepoint, kept for the next;
// a statement that aborts the transaction (one outside a savepoint of its
// own) undoes only its message. The granules of a message are not each
// undone after their writes (GranuleScope): a granule listed twice, or
// by two messages, sees its first write, as on the pool.
func (r *recoverRun) dryRunInOrder(ctx context.Context, scope selection.Scope, emit func(Object) error) error {
	if !r.DryRun || r.Pool == nil {
		return errors.New("dryRunInOrder needs a dry run with a pool")
	}
	tx, err := r.Pool.Begin(ctx)
	if err != nil {
		return cumulusdb.Classify(err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // the point: nothing is kept
	db := r.DB.InTx(tx)
	r.inOrder = &inOrderTx{tx: tx, db: inOrderDB{DB: db, RecordSource: db, ProviderSource: db}}
	defer func() { r.inOrder = nil }()
	r.Concurrency = 1 // one message after another, in order
	return r.runScope(ctx, scope, emit)
}

// inOrderTx is dryRunInOrder's transaction and the DB writing into it.
type inOrderTx struct {
	tx pgx.Tx
	db inOrderDB
}

// inOrderDB is a DB in dryRunInOrder's transaction without GranuleScope,
// whose savepoints are rolled back after each granule: there the writes
// are kept for the granules and messages after them.
type inOrderDB struct {
	recovery.DB
	recovery.RecordSource
	recovery.ProviderSource
}

// savepoint names the savepoint of one message in dryRunInOrder.
const savepoint = "deadletter_dry_run_message"

// dryRunDB is what a dry run writes one message into, and what ends it:
// a transaction of its own, rolled back; or, in dryRunInOrder, a
// savepoint of its transaction, released for the messages after it.
func (r *recoverRun) dryRunDB(ctx context.Context) (recovery.DB, func(), error) {
	if r.inOrder == nil {
		t, err := r.Pool.Begin(ctx)
		if err != nil {
			return nil, nil, cumulusdb.Classify(err)
		}
		return r.DB.InTx(t), func() { _ = t.Rollback(ctx) }, nil
	}
	s := r.inOrder
	if _, err := s.tx.Exec(ctx, "SAVEPOINT "+savepoint); err != nil {
		return nil, nil, cumulusdb.Classify(err)
	}
	return s.db, func() {
		if _, err := s.tx.Exec(ctx, "RELEASE SAVEPOINT "+savepoint); err == nil {
			return
		}
		// The transaction was aborted by a statement of this message:
		// undo the message, and go on with the next.
		_, _ = s.tx.Exec(ctx, "ROLLBACK TO SAVEPOINT "+savepoint)
		_, _ = s.tx.Exec(ctx, "RELEASE SAVEPOINT "+savepoint)
	}, nil
}
