// Package cumulusdb is the PostgreSQL adapter of the write core: Open (the
// schema generation read from the catalog, the checks that the database can
// take the writes), one statement set per generation behind the same DB
// (v21's upserts with their WHERE guards; v22's inserts and updates on
// partitioned tables and guard tables, v22.go), the natural-key lookups,
// whose-error-is-it classification, the archive lock, and the project's own
// DDL of each generation for test and local databases.
package cumulusdb

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/deadletter/deadletter/internal/recovery"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// querier is what a pool and a transaction have in common.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Begin(ctx context.Context) (pgx.Tx, error)
}

// DB implements recovery.DB on a pool, or on one transaction (the dry run,
// which rolls it back).
type DB struct {
	q    querier
	inTx bool
	// gen is the schema generation the statements are written for: v21's
	// upserts, or v22's writes on partitioned tables (v22.go).
	gen Generation
	st  *statements
	// ids caches positive lookups of the reference rows recovery never
	// deletes (collections, providers, async operations): a few per run.
	ids *sync.Map
	// parents caches parent execution lookups. Executions are one per
	// message, so this cache is bounded: it starts over when full, and
	// memory stays flat however many messages a run writes.
	parents *boundedIDs
	// watch resolves the relations errors name and compares the schema
	// with the one the run started on (Watch; never compared when the DB
	// was not made by Open).
	watch *schemaWatch
	// keys are the unique keys 23505s named, with the columns of each
	// that the database fills (sequences.go).
	keys *sync.Map
}

// boundedIDs is a cache of at most max ids, emptied when full.
type boundedIDs struct {
	mu  sync.Mutex
	m   map[string]int64
	max int
}

func newBoundedIDs(max int) *boundedIDs { return &boundedIDs{m: map[string]int64{}, max: max} }

func (b *boundedIDs) get(k string) (int64, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	id, ok := b.m[k]
	return id, ok
}

func (b *boundedIDs) put(k string, id int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.m) >= b.max {
		clear(b.m)
	}
	b.m[k] = id
}

// parentCacheSize bounds the parent execution cache (about 1 MB).
const parentCacheSize = 4096

var _ recovery.DB = (*DB)(nil)

// New wraps a pool of a Cumulus v21 database.
func New(pool *pgxpool.Pool) *DB { return newDB(pool, false, V21) }

// NewFor wraps a pool of a database of generation gen (Detect).
func NewFor(pool *pgxpool.Pool, gen Generation) *DB { return newDB(pool, false, gen) }

// Generation is the schema generation d writes.
func (d *DB) Generation() Generation { return d.gen }

// InTx returns a DB whose writes all go into tx; each write is a savepoint,
// so a failed statement does not end the transaction.
func (d *DB) InTx(tx pgx.Tx) *DB {
	db := newDB(tx, true, d.gen)
	db.watch, db.keys = d.watch, d.keys
	return db
}

func newDB(q querier, inTx bool, gen Generation) *DB {
	return &DB{q: q, inTx: inTx, gen: gen, st: statementsFor(gen), ids: &sync.Map{}, parents: newBoundedIDs(parentCacheSize),
		watch: &schemaWatch{gen: gen}, keys: &sync.Map{}}
}

// conflictRetries is how many times a unit is re-run after a race with
// another writer (a second recover, Cumulus itself, the db-writer):
//   - a unique violation: the other inserted the same execution, PDR,
//     granule or file between this statement's check and its insert (v21:
//     the violation comes from another unique index, executions_url_unique
//     say; v22: from a guard table). Re-run, the statement finds the
//     committed row and updates it;
//   - 40001: on v22 the other moved the row to another partition (a new
//     created_at, a file re-pointed to another granule) after this
//     statement's snapshot; re-run, it finds the row where it is now;
//   - 40P01: a deadlock between the two, which PostgreSQL broke by failing
//     this statement.
//
// A race, not a property of the message.
const conflictRetries = 5

// IsRace reports whether err is one that conflictRetries re-runs.
func IsRace(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return false
	}
	switch pgErr.Code {
	case "23505", "40001", "40P01":
		return true
	}
	return false
}

// one runs fn as one unit: directly on a pool (a single statement is its
// own transaction), or in a savepoint inside the dry run's transaction. A
// race with another writer is retried (conflictRetries); a unique
// violation that persists is the message's, as in Cumulus, and a
// serialization failure or deadlock the environment's.
func (d *DB) one(ctx context.Context, fn func(q querier) error) error {
	for attempt := 0; ; attempt++ {
		err := d.once(ctx, fn)
		if attempt == conflictRetries || !d.isRace(ctx, err) || ctx.Err() != nil {
			return d.classify(ctx, err)
		}
		time.Sleep(time.Duration(attempt+1) * 5 * time.Millisecond)
	}
}

// write runs a write whose generation has a plain insert to try first
// (insert, "" for none): as one unit, without a retry; a unique violation
// (the row exists, in its table or a guard table, or another writer just
// inserted it), or another race, runs the full statement as d.one does.
// v22's models write the same way (an insert in a savepoint, then the
// update).
func (d *DB) write(ctx context.Context, insert, full string, run func(q querier, sql string) error) error {
	if insert != "" {
		err := d.once(ctx, func(q querier) error { return run(q, insert) })
		if !d.isRace(ctx, err) || ctx.Err() != nil {
			return d.classify(ctx, err)
		}
	}
	return d.one(ctx, func(q querier) error { return run(q, full) })
}

func (d *DB) once(ctx context.Context, fn func(q querier) error) error {
	if !d.inTx {
		return fn(d.q)
	}
	sp, err := d.q.Begin(ctx)
	if err != nil {
		return err
	}
	if err := fn(sp); err != nil {
		_ = sp.Rollback(ctx)
		return err
	}
	return sp.Commit(ctx)
}

var _ recovery.GranuleScoper = (*DB)(nil)

// GranuleScope runs one granule's writes. Inside the dry run's transaction
// they go into a savepoint that is rolled back when fn returns (see
// recovery.GranuleScoper): later granules of the message read none of
// them, except a granule listed twice, which each time is judged against
// the row as it was before the message's granules. On a pool it is fn(d).
func (d *DB) GranuleScope(ctx context.Context, fn func(recovery.DB) error) error {
	if !d.inTx {
		return fn(d)
	}
	sp, err := d.q.Begin(ctx)
	if err != nil {
		return d.classify(ctx, err)
	}
	err = fn(&DB{q: sp, inTx: true, gen: d.gen, st: d.st, ids: d.ids, parents: d.parents, watch: d.watch, keys: d.keys})
	if rerr := sp.Rollback(ctx); rerr != nil && err == nil {
		err = d.classify(ctx, rerr)
	}
	return err
}

func (d *DB) lookup(ctx context.Context, cacheKey, sql string, args ...any) (*int64, error) {
	if v, ok := d.ids.Load(cacheKey); ok {
		id := v.(int64)
		return &id, nil
	}
	var id int64
	err := d.q.QueryRow(ctx, sql, args...).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, d.classify(ctx, err)
	}
	if cacheKey != "" {
		d.ids.Store(cacheKey, id)
	}
	return &id, nil
}

func (d *DB) CollectionID(ctx context.Context, name, version string) (*int64, error) {
	return d.lookup(ctx, "c\x00"+name+"\x00"+version, `SELECT cumulus_id FROM collections WHERE name = $1 AND version = $2`, name, version)
}

func (d *DB) AsyncOperationID(ctx context.Context, id string) (*int64, error) {
	return d.lookup(ctx, "a\x00"+id, `SELECT cumulus_id FROM async_operations WHERE id = $1::uuid`, id)
}

func (d *DB) ExecutionID(ctx context.Context, arn string) (*int64, error) {
	if id, ok := d.parents.get(arn); ok {
		return &id, nil
	}
	id, err := d.lookup(ctx, "", `SELECT cumulus_id FROM executions WHERE arn = $1`, arn)
	if id != nil {
		d.parents.put(arn, *id)
	}
	return id, err
}

func (d *DB) ProviderID(ctx context.Context, name string) (*int64, error) {
	return d.lookup(ctx, providerKey(name), `SELECT cumulus_id FROM providers WHERE name = $1`, name)
}

// providerKey is a provider's key in ids.
func providerKey(name string) string { return "p\x00" + name }

// PdrID is not cached: the run itself writes PDRs.
func (d *DB) PdrID(ctx context.Context, name string) (*int64, error) {
	return d.lookup(ctx, "", `SELECT cumulus_id FROM pdrs WHERE name = $1`, name)
}

func nullJSON(s string) any {
	if s == "" {
		return nil
	}
	return s
}

const executionCols = `arn, status, url, cumulus_version, tasks, workflow_name, created_at, "timestamp", updated_at,
  error, original_payload, final_payload, duration, async_operation_cumulus_id, collection_cumulus_id, parent_cumulus_id`

const executionValues = `VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7, $8, $9, $10::jsonb, $11::jsonb, $12::jsonb, $13, $14, $15, $16)`

// A running execution touches only created_at, updated_at, timestamp and
// original_payload on conflict: a late "running" never regresses a status.
var upsertRunningExecution = `INSERT INTO executions AS e (` + executionCols + `) ` + executionValues + `
ON CONFLICT (arn) DO UPDATE SET created_at = EXCLUDED.created_at, updated_at = EXCLUDED.updated_at,
  "timestamp" = EXCLUDED."timestamp", original_payload = EXCLUDED.original_payload
RETURNING cumulus_id`

// Other statuses overwrite every supplied column (no ordering guard in v21).
var upsertExecution = `INSERT INTO executions AS e (` + executionCols + `) ` + executionValues + `
ON CONFLICT (arn) DO UPDATE SET ` + coalesceSet("e", strings.Split(strings.ReplaceAll(executionCols, "\n", ""), ",")) + `
RETURNING cumulus_id`

// coalesceSet is "col = COALESCE(EXCLUDED.col, t.col)" for each column: a
// column the record did not supply (NULL here) keeps its value, as knex's
// merge of an insert without that column does.
func coalesceSet(alias string, cols []string) string {
	parts := make([]string, 0, len(cols))
	for _, c := range cols {
		c = strings.TrimSpace(c)
		parts = append(parts, fmt.Sprintf("%s = COALESCE(EXCLUDED.%s, %s.%s)", c, c, alias, c))
	}
	return strings.Join(parts, ", ")
}

// executionArgs are the execution statements' parameters $1-$16, then
// more.
func executionArgs(r *recovery.ExecutionRow, more ...any) []any {
	return append(append(make([]any, 0, 16+len(more)), r.Arn, r.Status, r.URL, r.CumulusVersion, nullJSON(r.Tasks), r.WorkflowName,
		r.CreatedAt, r.Timestamp, r.UpdatedAt, nullJSON(r.Error), nullJSON(r.OriginalPayload), nullJSON(r.FinalPayload),
		r.Duration, r.AsyncOperationID, r.CollectionID, r.ParentID), more...)
}

// pdrArgs are the PDR statements' parameters, with execution as $7 (the
// execution's cumulus_id, or the token of pdrAfterExecution).
func pdrArgs(r *recovery.PdrRow, execution any) []any {
	return []any{r.Name, r.Status, r.PANSent, r.PANMessage, r.Stats, r.Progress, execution,
		r.CollectionID, r.ProviderID, r.CreatedAt, r.UpdatedAt, r.Timestamp, r.Duration}
}

func (d *DB) UpsertExecution(ctx context.Context, r *recovery.ExecutionRow) (int64, error) {
	return d.upsertExecution(ctx, r, d.st.executionInsert)
}

// upsertExecution is UpsertExecution trying insert first ("": the full
// statement at once).
func (d *DB) upsertExecution(ctx context.Context, r *recovery.ExecutionRow, insert string) (int64, error) {
	sql := d.st.execution[boolIndex(r.Status == "running")]
	var id int64
	err := d.write(ctx, insert, sql, func(q querier, sql string) error {
		var taken *string
		err := q.QueryRow(ctx, sql, executionArgs(r)...).Scan(&taken, &id)
		if t, ok := takenID("executions", taken); ok && err == nil {
			return t
		}
		return err
	})
	var t *idTaken
	if errors.As(err, &t) {
		return 0, d.takenError(ctx, t)
	}
	return id, err
}

const pdrInsert = `INSERT INTO pdrs AS p (name, status, pan_sent, pan_message, stats, progress, execution_cumulus_id,
  collection_cumulus_id, provider_cumulus_id, created_at, updated_at, "timestamp", duration)
VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7, $8, $9, $10, $11, $12, $13)
ON CONFLICT (name) DO UPDATE SET status = EXCLUDED.status, pan_sent = EXCLUDED.pan_sent,
  pan_message = EXCLUDED.pan_message, stats = EXCLUDED.stats, progress = EXCLUDED.progress,
  execution_cumulus_id = COALESCE(EXCLUDED.execution_cumulus_id, p.execution_cumulus_id),
  collection_cumulus_id = EXCLUDED.collection_cumulus_id, provider_cumulus_id = EXCLUDED.provider_cumulus_id,
  created_at = EXCLUDED.created_at, updated_at = EXCLUDED.updated_at, "timestamp" = EXCLUDED."timestamp",
  duration = EXCLUDED.duration
WHERE p.created_at <= EXCLUDED.created_at`

// A running PDR also needs a new execution or more progress (SQL NULL
// semantics: a NULL execution on either side never counts as different).
var upsertRunningPdr = pdrInsert + `
  AND (p.execution_cumulus_id != EXCLUDED.execution_cumulus_id OR p.progress < EXCLUDED.progress)
RETURNING cumulus_id`

var upsertPdr = pdrInsert + `
RETURNING cumulus_id`

func (d *DB) UpsertPdr(ctx context.Context, r *recovery.PdrRow) (bool, error) {
	sql := d.st.pdr[boolIndex(r.Status != nil && *r.Status == "running")]
	written := false
	err := d.one(ctx, func(q querier) error {
		var id int64
		err := q.QueryRow(ctx, sql, pdrArgs(r, r.ExecutionID)...).Scan(&id)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		written = err == nil
		return err
	})
	return written, err
}

func (d *DB) OtherCollection(ctx context.Context, granuleID string, collectionID int64) (string, error) {
	var other string
	err := d.q.QueryRow(ctx, `SELECT c.name || '___' || c.version FROM granules g JOIN collections c ON c.cumulus_id = g.collection_cumulus_id
WHERE g.granule_id = $1 AND g.collection_cumulus_id <> $2 LIMIT 1`, granuleID, collectionID).Scan(&other)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	return other, d.classify(ctx, err)
}

var granuleCols = []string{"granule_id", "status", "collection_cumulus_id", "created_at", "updated_at", "published",
	"duration", "time_to_archive", "time_to_process", "product_volume", "error", "cmr_link", "pdr_cumulus_id",
	"provider_cumulus_id", "beginning_date_time", "ending_date_time", "last_update_date_time",
	"processing_end_date_time", "processing_start_date_time", "production_date_time", "query_fields",
	`"timestamp"`, "producer_granule_id"}

// granuleTypes are the SQL types of granuleCols (INSERT ... SELECT needs
// them spelled out).
var granuleTypes = []string{"text", "text", "integer", "timestamptz", "timestamptz", "boolean",
	"real", "real", "real", "bigint", "jsonb", "text", "integer",
	"integer", "timestamptz", "timestamptz", "timestamptz",
	"timestamptz", "timestamptz", "timestamptz", "jsonb",
	"timestamptz", "text"}

// granuleSQL is the whole granule write as one statement (one transaction,
// one round trip): refuse a granule_id held by another collection, the
// guarded upsert, then the granules_executions link.
func granuleSQL(status string) string {
	var set, guard string
	switch status {
	case "running", "queued":
		set = `status = EXCLUDED.status, "timestamp" = EXCLUDED."timestamp", updated_at = EXCLUDED.updated_at, created_at = EXCLUDED.created_at`
		states := `'completed', 'failed', 'unknown'`
		if status == "queued" {
			states = `'running', 'completed', 'failed', 'unknown'`
		}
		guard = ` AND NOT EXISTS (SELECT 1 FROM executions x WHERE x.cumulus_id = $24::bigint AND x.status IN (` + states + `))`
	default:
		cols := make([]string, 0, len(granuleCols))
		for _, c := range granuleCols {
			if c != "granule_id" && c != "collection_cumulus_id" {
				cols = append(cols, c)
			}
		}
		set = coalesceSet("g", cols)
	}
	params := make([]string, len(granuleCols))
	for i := range granuleCols {
		params[i] = fmt.Sprintf("$%d::%s", i+1, granuleTypes[i])
	}
	return `WITH other AS (
  SELECT c.name || '___' || c.version AS collection FROM granules o JOIN collections c ON c.cumulus_id = o.collection_cumulus_id
  WHERE o.granule_id = $1 AND o.collection_cumulus_id <> $3 LIMIT 1
), up AS (
  INSERT INTO granules AS g (` + strings.Join(granuleCols, ", ") + `)
  SELECT ` + strings.Join(params, ", ") + ` WHERE NOT EXISTS (SELECT 1 FROM other)
  ON CONFLICT (granule_id, collection_cumulus_id) DO UPDATE SET ` + set + `
  WHERE g.created_at <= EXCLUDED.created_at` + guard + `
  RETURNING g.cumulus_id
), link AS (
  INSERT INTO granules_executions (granule_cumulus_id, execution_cumulus_id)
  SELECT cumulus_id, $24::bigint FROM up WHERE $24::bigint IS NOT NULL
  ON CONFLICT (granule_cumulus_id, execution_cumulus_id) DO NOTHING
)
SELECT (SELECT collection FROM other), (SELECT cumulus_id FROM up)`
}

var granuleSQLByStatus = map[string]string{
	"running": granuleSQL("running"), "queued": granuleSQL("queued"), "final": granuleSQL("completed"),
}

func (d *DB) WriteGranule(ctx context.Context, gw *recovery.GranuleWrite) (recovery.GranuleResult, error) {
	return d.writeGranule(ctx, gw, d.st.granuleInsert)
}

// writeGranule is WriteGranule trying insert first ("": the full
// statement at once).
func (d *DB) writeGranule(ctx context.Context, gw *recovery.GranuleWrite, insert string) (recovery.GranuleResult, error) {
	var other *string
	var id *int64
	err := d.write(ctx, insert, granuleStatement(d.st.granule, gw.Row.Status), func(q querier, sql string) error {
		other, id = nil, nil
		return q.QueryRow(ctx, sql, granuleArgs(gw)...).Scan(&other, &id)
	})
	return d.granuleResult(ctx, gw, other, id, err)
}

// granuleResult reads the granule statement's result: the other
// collection holding the granule_id (a refusal of the data, not a
// database failure), or the upserted id, none when the guard dropped the
// write. err is the statement's, already classified.
func (d *DB) granuleResult(ctx context.Context, gw *recovery.GranuleWrite, other *string, id *int64, err error) (recovery.GranuleResult, error) {
	var res recovery.GranuleResult
	switch {
	case err != nil:
		return res, err
	case other != nil:
		if t, ok := takenID("granules", other); ok {
			return res, d.takenError(ctx, t)
		}
		return res, d.st.otherCollection(gw, *other)
	case id == nil:
		res.Dropped = true
	default:
		res.CumulusID = *id
	}
	return res, nil
}

// otherCollection carries the refusal through d.one's Classify unchanged.
type otherCollection struct{ err error }

func (e *otherCollection) Error() string { return e.err.Error() }

func (d *DB) MarkGranuleFailed(ctx context.Context, granuleID string, collectionID int64, errJSON string) (bool, error) {
	var n int64
	err := d.one(ctx, func(q querier) error {
		tag, err := q.Exec(ctx, `UPDATE granules SET status = 'failed', error = $3::jsonb WHERE granule_id = $1 AND collection_cumulus_id = $2`,
			granuleID, collectionID, errJSON)
		n = tag.RowsAffected()
		return err
	})
	return n > 0, err
}

const fileUpsert = `INSERT INTO files AS f (bucket, key, checksum_type, checksum_value, file_name, file_size, granule_cumulus_id, path, source, type)
%s
ON CONFLICT (bucket, key) DO UPDATE SET bucket = EXCLUDED.bucket, key = EXCLUDED.key,
  checksum_type = EXCLUDED.checksum_type, checksum_value = EXCLUDED.checksum_value, file_name = EXCLUDED.file_name,
  file_size = EXCLUDED.file_size, granule_cumulus_id = EXCLUDED.granule_cumulus_id, path = EXCLUDED.path,
  source = EXCLUDED.source, type = EXCLUDED.type
RETURNING cumulus_id`

// writeFilesSQL upserts every file and deletes the granule's other files in
// one statement (one round trip).
var writeFilesSQL = `WITH w AS (` + fmt.Sprintf(fileUpsert, `SELECT b, k, ct, cv, fn, fs, $1::bigint, NULL, s, t
FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bigint[], $8::text[], $9::text[]) AS x(b, k, ct, cv, fn, fs, s, t)`) + `)
DELETE FROM files WHERE granule_cumulus_id = $1 AND cumulus_id NOT IN (SELECT cumulus_id FROM w)`

var writeFileSQL = fmt.Sprintf(fileUpsert, `VALUES ($1, $2, $3, $4, $5, $6, $7, NULL, $8, $9)`)

func (d *DB) WriteFiles(ctx context.Context, granuleCumulusID, collectionCumulusID int64, files []recovery.FileRow) error {
	return d.writeFiles(ctx, granuleCumulusID, collectionCumulusID, files, d.st.filesInsert)
}

// writeFiles is WriteFiles trying insert first ("": the full statement
// at once).
func (d *DB) writeFiles(ctx context.Context, granuleCumulusID, collectionCumulusID int64, files []recovery.FileRow, insert string) error {
	args := d.filesArgs(granuleCumulusID, collectionCumulusID, files)
	err := d.write(ctx, insert, d.st.files, func(q querier, sql string) error {
		_, err := q.Exec(ctx, sql, args...)
		return err
	})
	if err == nil || recovery.IsTransient(err) {
		return err
	}
	return d.filesFallback(ctx, granuleCumulusID, files, err)
}

// filesArgs are the files statement's parameters: writeFilesSQL's, and on
// v22 the granule's collection after them (the rest of its primary key).
func (d *DB) filesArgs(granuleCumulusID, collectionCumulusID int64, files []recovery.FileRow) []any {
	args := filesArgs(granuleCumulusID, files)
	if d.gen.Partitioned() {
		args = append(args, collectionCumulusID)
	}
	return args
}

// filesArgs are writeFilesSQL's parameters.
func filesArgs(granuleCumulusID int64, files []recovery.FileRow) []any {
	// Two files with the same bucket and key: the last one wins, as it does
	// when v21 writes them one by one.
	last := map[[2]string]int{}
	for i, f := range files {
		if f.Bucket != nil && f.Key != nil {
			last[[2]string{*f.Bucket, *f.Key}] = i
		}
	}
	var cols [8][]any
	for i, f := range files {
		if f.Bucket != nil && f.Key != nil && last[[2]string{*f.Bucket, *f.Key}] != i {
			continue
		}
		for j, v := range []any{f.Bucket, f.Key, f.ChecksumType, f.ChecksumValue, f.FileName, f.Size, f.Source, f.Type} {
			cols[j] = append(cols[j], v)
		}
	}
	texts := func(vs []any) []*string {
		out := make([]*string, len(vs))
		for i, v := range vs {
			out[i] = v.(*string)
		}
		return out
	}
	sizes := make([]*int64, len(cols[5]))
	for i, v := range cols[5] {
		sizes[i] = v.(*int64)
	}
	return []any{granuleCumulusID, texts(cols[0]), texts(cols[1]), texts(cols[2]), texts(cols[3]),
		texts(cols[4]), sizes, texts(cols[6]), texts(cols[7])}
}

// filesFallback follows a failed files statement (err, classified): one
// file failed (a NOT NULL key, ...), so they are written one by one as v21
// does, keeping those that succeed and removing nothing. The granule's
// error names those that failed (an AggregateError), or is the
// statement's when each one alone was written.
func (d *DB) filesFallback(ctx context.Context, granuleCumulusID int64, files []recovery.FileRow, err error) error {
	return d.filesFallbacks(ctx, []filesFailure{{granuleCumulusID, files, err}})[0]
}

// filesFailure is a granule's files statement that failed (err).
type filesFailure struct {
	granuleCumulusID int64
	files            []recovery.FileRow
	err              error
}

// filesFallbacks is filesFallback for each failure, every file statement
// in one round trip, each its own transaction, in order, as when they are
// sent one after another. A file whose statement met a race is written
// again alone, and so is each file after it in its granule (the last of
// two files with the same bucket and key wins). A transient error is the
// granule's error. Unlike one after another, the files after a transient
// error (the connection lost, a statement cancelled, a sequence behind
// next to a file without a key) were sent too: the message is left in
// place and written again, which writes the same rows.
func (d *DB) filesFallbacks(ctx context.Context, fails []filesFailure) []error {
	out := make([]error, len(fails))
	first := make([]int, len(fails)) // each failure's first statement, or -1
	var stmts []pipeStmt
	for i, f := range fails {
		first[i] = -1
		switch {
		case recovery.IsTransient(f.err):
			out[i] = f.err
		case d.st.fileOne == "":
			// v22 writes a granule's files in one transaction: none is kept.
			out[i] = fmt.Errorf("writing files: %v", f.err)
		default:
			first[i] = len(stmts)
			for _, file := range f.files {
				stmts = append(stmts, pipeStmt{sql: d.st.fileOne, args: fileOneArgs(f.granuleCumulusID, file), read: execOnly})
			}
		}
	}
	errs := d.pipeline(ctx, stmts)
	at := time.Now()
	for i, f := range fails {
		if first[i] < 0 {
			continue
		}
		var msgs []string
		alone := false
		for j, file := range f.files {
			ferr := errs[first[i]+j]
			if alone = alone || (d.isRace(ctx, ferr) && ctx.Err() == nil); alone {
				ferr = d.one(ctx, func(q querier) error {
					_, err := q.Exec(ctx, d.st.fileOne, fileOneArgs(f.granuleCumulusID, file)...)
					return err
				})
			} else {
				ferr = d.classifyAt(ctx, ferr, at)
			}
			if recovery.IsTransient(ferr) {
				out[i] = ferr
				break
			}
			if ferr != nil {
				msgs = append(msgs, describeFile(file)+": "+ferr.Error())
			}
		}
		switch {
		case out[i] != nil:
		case len(msgs) == 0:
			out[i] = fmt.Errorf("writing files: %v", f.err)
		default:
			out[i] = errors.New("AggregateError: " + strings.Join(msgs, " | "))
		}
	}
	return out
}

// fileOneArgs are the one-file statement's parameters.
func fileOneArgs(granuleCumulusID int64, f recovery.FileRow) []any {
	return []any{f.Bucket, f.Key, f.ChecksumType, f.ChecksumValue, f.FileName, f.Size, granuleCumulusID, f.Source, f.Type}
}

func describeFile(f recovery.FileRow) string {
	s := func(p *string) string {
		if p == nil {
			return "<none>"
		}
		return *p
	}
	return fmt.Sprintf("file %s (bucket %s, key %s)", s(f.FileName), s(f.Bucket), s(f.Key))
}

func (d *DB) LinkGranules(ctx context.Context, granuleIDs []string, executionID int64) error {
	return d.one(ctx, func(q querier) error {
		_, err := q.Exec(ctx, d.st.linkGranules, granuleIDs, executionID)
		return err
	})
}

// Now is the database's clock, for tests that compare timestamps.
func Now(ctx context.Context, q querier) (time.Time, error) {
	var t time.Time
	err := q.QueryRow(ctx, `SELECT now()`).Scan(&t)
	return t, err
}

// granuleArgs are the granule upsert's parameters ($1 ... $24), for
// WriteGranule and WriteGranuleRecord alike.
func granuleArgs(gw *recovery.GranuleWrite) []any {
	r := &gw.Row
	return []any{r.GranuleID, r.Status, r.CollectionID, r.CreatedAt, r.UpdatedAt, r.Published,
		r.Duration, r.TimeToArchive, r.TimeToProcess, r.ProductVolume, nullJSON(r.Error), r.CmrLink, r.PdrID,
		r.ProviderID, r.Beginning, r.Ending, r.LastUpdate, r.ProcessingEnd, r.ProcessingStart, r.Production,
		nullJSON(r.QueryFields), r.Timestamp, r.ProducerGranuleID, gw.ExecutionID}
}
