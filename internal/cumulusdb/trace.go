package cumulusdb

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// What `dla trace` reads of one record: its row or rows as they stand,
// in a read-only transaction (the same statements on v21's tables and
// v22's partitioned ones: they name no partition key).

// TraceRow is one row of a traced record.
type TraceRow struct {
	Table      string     `json:"table"` // granules, executions, pdrs
	ID         string     `json:"id"`    // granule_id, arn, name
	Status     string     `json:"status"`
	Collection *string    `json:"collection"` // name___version; null: none
	Execution  *string    `json:"execution"`  // the newest execution linked (granules), the PDR's; null: none
	CreatedAt  *time.Time `json:"created_at"`
	UpdatedAt  *time.Time `json:"updated_at"`
	Timestamp  *time.Time `json:"timestamp"`
	// Files counts a granule's files, Granules an execution's or a PDR's
	// granules; null where it does not apply.
	Files    *int `json:"files"`
	Granules *int `json:"granules"`
}

// Trace kinds: what a traced record is.
const (
	TraceGranule   = "granule"
	TraceExecution = "execution"
	TracePDR       = "pdr"
)

const traceCollection = `(SELECT c.name || '___' || c.version FROM collections c WHERE c.cumulus_id = %s.collection_cumulus_id)`

var traceQueries = map[string]string{
	// A granule id is unique per collection in v21, across them in v22:
	// every row of that id is returned.
	TraceGranule: `SELECT 'granules', g.granule_id, g.status, ` + fmt.Sprintf(traceCollection, "g") + `,
  (SELECT e.arn FROM granules_executions ge JOIN executions e ON e.cumulus_id = ge.execution_cumulus_id
     WHERE ge.granule_cumulus_id = g.cumulus_id ORDER BY e.created_at DESC, e.cumulus_id DESC LIMIT 1),
  g.created_at, g.updated_at, g."timestamp",
  (SELECT count(*)::int FROM files f WHERE f.granule_cumulus_id = g.cumulus_id), NULL::int
FROM granules g WHERE g.granule_id = $1 ORDER BY g.created_at, g.cumulus_id`,
	// An execution by its arn, or by its name (the arn's last part),
	// compared as text: a name is not a LIKE pattern ('_', '%', '\').
	// The arn's own index serves the first; the name reads every row, as
	// a suffix LIKE did.
	TraceExecution: `SELECT 'executions', e.arn, e.status, ` + fmt.Sprintf(traceCollection, "e") + `, NULL::text,
  e.created_at, e.updated_at, e."timestamp", NULL::int,
  (SELECT count(*)::int FROM granules_executions ge WHERE ge.execution_cumulus_id = e.cumulus_id)
FROM executions e WHERE e.arn = $1 OR (strpos($1, ':') = 0 AND right(e.arn, length($1) + 1) = ':' || $1) ORDER BY e.created_at, e.cumulus_id`,
	TracePDR: `SELECT 'pdrs', p.name, p.status, ` + fmt.Sprintf(traceCollection, "p") + `,
  (SELECT e.arn FROM executions e WHERE e.cumulus_id = p.execution_cumulus_id),
  p.created_at, p.updated_at, p."timestamp", NULL::int,
  (SELECT count(*)::int FROM granules g WHERE g.pdr_cumulus_id = p.cumulus_id)
FROM pdrs p WHERE p.name = $1 ORDER BY p.created_at, p.cumulus_id`,
}

// TraceRows reads the rows of one record (kind TraceGranule, TraceExecution
// or TracePDR) in a read-only transaction: it never writes. No row is an
// empty list.
func TraceRows(ctx context.Context, pool *pgxpool.Pool, kind, id string) ([]TraceRow, error) {
	sql, ok := traceQueries[kind]
	if !ok {
		return nil, fmt.Errorf("trace: unknown kind %q", kind)
	}
	tx, err := pool.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(ctx) //nolint:errcheck // read only: nothing to keep
	rows, err := tx.Query(ctx, sql, id)
	if err != nil {
		return nil, fmt.Errorf("reading %s %q: %w", kind, id, err)
	}
	out := []TraceRow{}
	for rows.Next() {
		var r TraceRow
		if err := rows.Scan(&r.Table, &r.ID, &r.Status, &r.Collection, &r.Execution, &r.CreatedAt, &r.UpdatedAt, &r.Timestamp, &r.Files, &r.Granules); err != nil {
			rows.Close()
			return nil, fmt.Errorf("reading %s %q: %w", kind, id, err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading %s %q: %w", kind, id, err)
	}
	return out, nil
}
