package cumulusdb

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/deadletter/deadletter/internal/recovery"
)

// The writes returning the rows they left (recovery.RecordSource), for the
// SNS notifications: the same statements as db.go with RETURNING the whole
// row, plus the references v21's translatePostgres*ToApi* look up, in the
// same statement.

var _ recovery.RecordSource = (*DB)(nil)

// withReturning replaces a statement's final "RETURNING cumulus_id" with
// "RETURNING <alias>.*" and selects cols from it.
func withReturning(sql, alias, cols string) string {
	sql = strings.TrimSuffix(sql, "RETURNING cumulus_id")
	return "WITH up AS (" + sql + "RETURNING " + alias + ".*)\nSELECT " + cols + " FROM up"
}

const storedExecutionCols = `up.cumulus_id, up.arn, up.status, up.url, up.cumulus_version, up.workflow_name,
  up.tasks::text, up.error::text, up.original_payload::text, up.final_payload::text, up.duration, up.archived,
  up.created_at, up.updated_at, up."timestamp",
  (SELECT c.name || '___' || c.version FROM collections c WHERE c.cumulus_id = up.collection_cumulus_id),
  (SELECT a.id::text FROM async_operations a WHERE a.cumulus_id = up.async_operation_cumulus_id),
  (SELECT x.arn FROM executions x WHERE x.cumulus_id = up.parent_cumulus_id)`

var (
	upsertExecutionRecord        = withReturning(upsertExecution, "e", "NULL::text, "+storedExecutionCols)
	upsertRunningExecutionRecord = withReturning(upsertRunningExecution, "e", "NULL::text, "+storedExecutionCols)
)

func (d *DB) UpsertExecutionRecord(ctx context.Context, r *recovery.ExecutionRow) (int64, *recovery.StoredExecution, error) {
	sql := d.st.executionRecord[boolIndex(r.Status == "running")]
	var id int64
	var e recovery.StoredExecution
	err := d.write(ctx, d.st.executionRecordInsert, sql, func(q querier, sql string) error {
		var taken, tasks, errJSON, orig, final *string
		err := q.QueryRow(ctx, sql, executionArgs(r)...).Scan(&taken, &id, &e.Arn, &e.Status, &e.URL,
			&e.CumulusVersion, &e.WorkflowName, &tasks, &errJSON, &orig, &final, &e.Duration, &e.Archived,
			&e.CreatedAt, &e.UpdatedAt, &e.Timestamp, &e.CollectionID, &e.AsyncOperationID, &e.ParentArn)
		if t, ok := takenID("executions", taken); ok && err == nil {
			return t
		}
		e.Tasks, e.Error, e.OriginalPayload, e.FinalPayload = deref(tasks), deref(errJSON), deref(orig), deref(final)
		return err
	})
	var t *idTaken
	if errors.As(err, &t) {
		return 0, nil, d.takenError(ctx, t)
	}
	if err != nil {
		return 0, nil, err
	}
	return id, &e, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

const storedPdrCols = `up.cumulus_id, up.name, up.status,
  (SELECT c.name || '___' || c.version FROM collections c WHERE c.cumulus_id = up.collection_cumulus_id),
  (SELECT p.name FROM providers p WHERE p.cumulus_id = up.provider_cumulus_id),
  (SELECT x.arn FROM executions x WHERE x.cumulus_id = up.execution_cumulus_id),
  up.progress, up.duration, up.pan_sent, up.pan_message, up.address, up.original_url, up.stats::text,
  up.created_at, up.updated_at, up."timestamp"`

var (
	upsertPdrRecord        = withReturning(upsertPdr, "p", storedPdrCols)
	upsertRunningPdrRecord = withReturning(upsertRunningPdr, "p", storedPdrCols)
	// readPdrRecord is the re-read when the guard kept the existing row.
	readPdrRecord = `SELECT ` + storedPdrCols + ` FROM pdrs up WHERE up.name = $1`
)

func scanPdr(row pgx.Row, p *recovery.StoredPdr) error {
	var stats *string
	err := row.Scan(&p.CumulusID, &p.Name, &p.Status, &p.CollectionID, &p.Provider, &p.ExecutionArn, &p.Progress, &p.Duration,
		&p.PANSent, &p.PANMessage, &p.Address, &p.OriginalURL, &stats, &p.CreatedAt, &p.UpdatedAt, &p.Timestamp)
	p.Stats = deref(stats)
	return err
}

func (d *DB) UpsertPdrRecord(ctx context.Context, r *recovery.PdrRow) (bool, *recovery.StoredPdr, error) {
	sql := d.st.pdrRecord[boolIndex(r.Status != nil && *r.Status == "running")]
	var written bool
	var p recovery.StoredPdr
	err := d.one(ctx, func(q querier) error {
		err := scanPdr(q.QueryRow(ctx, sql, pdrArgs(r, r.ExecutionID)...), &p)
		if errors.Is(err, pgx.ErrNoRows) {
			written = false
			return scanPdr(q.QueryRow(ctx, readPdrRecord, r.Name), &p)
		}
		written = err == nil
		return err
	})
	if err != nil {
		return false, nil, err
	}
	return written, &p, nil
}

// storedGranuleCols are the granule row's columns, for a table or CTE
// aliased g.
const storedGranuleCols = `g.cumulus_id, g.granule_id, g.status, g.producer_granule_id, g.collection_cumulus_id,
  g.pdr_cumulus_id, g.provider_cumulus_id, g.archived, g.published, g.duration, g.time_to_archive, g.time_to_process,
  g.product_volume::text, g.error::text, g.query_fields::text, g.cmr_link, g.beginning_date_time, g.ending_date_time,
  g.production_date_time, g.last_update_date_time, g.processing_start_date_time, g.processing_end_date_time,
  g.created_at, g.updated_at, g."timestamp"`

func granuleDest(g *recovery.StoredGranule, errJSON, queryFields **string) []any {
	return []any{&g.CumulusID, &g.GranuleID, &g.Status, &g.ProducerGranuleID, &g.CollectionCumulusID,
		&g.PdrCumulusID, &g.ProviderCumulusID, &g.Archived, &g.Published, &g.Duration, &g.TimeToArchive, &g.TimeToProcess,
		&g.ProductVolume, errJSON, queryFields, &g.CmrLink, &g.Beginning, &g.Ending,
		&g.Production, &g.LastUpdate, &g.ProcessingStart, &g.ProcessingEnd,
		&g.CreatedAt, &g.UpdatedAt, &g.Timestamp}
}

// granuleRecordSQL is granuleSQL returning the whole row: the other
// collection, then the row's columns (all NULL when the write was
// dropped or refused).
func granuleRecordSQL(status string) string {
	sql := granuleSQL(status)
	sql = strings.Replace(sql, "RETURNING g.cumulus_id", "RETURNING g.*", 1)
	i := strings.LastIndex(sql, "SELECT (SELECT collection FROM other)")
	return sql[:i] + "SELECT (SELECT collection FROM other), " + storedGranuleCols + "\nFROM (SELECT 1) AS one LEFT JOIN up AS g ON true"
}

var granuleRecordSQLByStatus = map[string]string{
	"running": granuleRecordSQL("running"), "queued": granuleRecordSQL("queued"), "final": granuleRecordSQL("completed"),
}

func (d *DB) WriteGranuleRecord(ctx context.Context, gw *recovery.GranuleWrite) (recovery.GranuleResult, *recovery.StoredGranule, error) {
	return d.writeGranuleRecord(ctx, gw, d.st.granuleRecordInsert)
}

// writeGranuleRecord is WriteGranuleRecord trying insert first ("": the
// full statement at once).
func (d *DB) writeGranuleRecord(ctx context.Context, gw *recovery.GranuleWrite, insert string) (recovery.GranuleResult, *recovery.StoredGranule, error) {
	var sc granuleRecordScan
	err := d.write(ctx, insert, granuleStatement(d.st.granuleRecord, gw.Row.Status), func(q querier, sql string) error {
		sc = granuleRecordScan{}
		return q.QueryRow(ctx, sql, granuleArgs(gw)...).Scan(sc.dest()...)
	})
	return d.granuleRecordResult(ctx, gw, &sc, err)
}

// granuleRecordScan holds what the granule record statement returns: the
// other collection, then the row's columns (all NULL when the write was
// dropped or refused, hence the nullable targets of the columns that are
// NOT NULL in a row).
type granuleRecordScan struct {
	other, gid, status, errJSON, queryFields *string
	id, collID                               *int64
	archived                                 *bool
	g                                        recovery.StoredGranule
}

func (sc *granuleRecordScan) dest() []any {
	dest := granuleDest(&sc.g, &sc.errJSON, &sc.queryFields)
	dest[0], dest[1], dest[2], dest[4], dest[7] = &sc.id, &sc.gid, &sc.status, &sc.collID, &sc.archived
	return append([]any{&sc.other}, dest...)
}

// granuleRecordResult reads the granule record statement's result (err
// its error, already classified), as granuleResult does, with the row
// the upsert left (nil when the guard dropped the write).
func (d *DB) granuleRecordResult(ctx context.Context, gw *recovery.GranuleWrite, sc *granuleRecordScan, err error) (recovery.GranuleResult, *recovery.StoredGranule, error) {
	res, err := d.granuleResult(ctx, gw, sc.other, sc.id, err)
	if err != nil || res.Dropped {
		return res, nil, err
	}
	g := sc.g
	g.CumulusID, g.GranuleID, g.Status, g.CollectionCumulusID, g.Archived = *sc.id, *sc.gid, *sc.status, *sc.collID, *sc.archived
	g.Error, g.QueryFields = deref(sc.errJSON), deref(sc.queryFields)
	return res, &g, nil
}

// markGranuleFailedSQL marks a granule failed and returns its row.
const markGranuleFailedSQL = `UPDATE granules AS g SET status = 'failed', error = $3::jsonb
WHERE granule_id = $1 AND collection_cumulus_id = $2 RETURNING ` + storedGranuleCols

func (d *DB) MarkGranuleFailedRecord(ctx context.Context, granuleID string, collectionID int64, errJSON string) (*recovery.StoredGranule, error) {
	var stored *recovery.StoredGranule
	err := d.one(ctx, func(q querier) error {
		var g recovery.StoredGranule
		var e, qf *string
		err := q.QueryRow(ctx, markGranuleFailedSQL, granuleID, collectionID, errJSON).Scan(granuleDest(&g, &e, &qf)...)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		g.Error, g.QueryFields = deref(e), deref(qf)
		stored = &g
		return nil
	})
	return stored, err
}

// CompleteGranule reads what translatePostgresGranuleToApiGranule reads:
// the collection, the execution URL (the most recent by timestamp, NULLs
// first as knex's orderBy desc gives), the PDR and provider names, and
// the files (v21 does not order them; here by cumulus_id).
func (d *DB) CompleteGranule(ctx context.Context, g *recovery.StoredGranule) error {
	// One round trip: the references once, the files joined to them (a
	// granule without files is one row of NULL file columns). It is
	// made once per granule notification.
	rows, err := d.q.Query(ctx, d.completeGranuleSQL(), completeGranuleArgs(g)...)
	if err != nil {
		return Classify(err)
	}
	return Classify(readCompleteGranule(g)(rows))
}

func completeGranuleArgs(g *recovery.StoredGranule) []any {
	return []any{g.CumulusID, g.CollectionCumulusID, g.PdrCumulusID, g.ProviderCumulusID}
}

// readCompleteGranule reads completeGranuleSQL's rows into g.
func readCompleteGranule(g *recovery.StoredGranule) func(pgx.Rows) error {
	return func(rows pgx.Rows) error {
		defer rows.Close()
		g.Files = g.Files[:0]
		for rows.Next() {
			var f recovery.StoredFile
			var fileID *int64
			var bucket, key *string
			if err := rows.Scan(&g.CollectionID, &g.ExecutionURL, &g.PdrName, &g.Provider,
				&fileID, &bucket, &key, &f.ChecksumValue, &f.ChecksumType, &f.FileName, &f.Source, &f.Type, &f.Size); err != nil {
				return err
			}
			if fileID != nil {
				f.Bucket, f.Key = deref(bucket), deref(key)
				g.Files = append(g.Files, f)
			}
		}
		return rows.Err()
	}
}

// completeGranuleSQL is CompleteGranule's query: on v22 the granule's
// links and files are those of its whole primary key (cumulus_id and
// collection), never another collection's granule of the same cumulus_id.
func (d *DB) completeGranuleSQL() string {
	if d.gen.Partitioned() {
		return completeGranuleV22SQL
	}
	return completeGranuleV21SQL
}

const completeGranuleV21SQL = `SELECT r.collection_id, r.url, r.pdr_name, r.provider,
  f.cumulus_id, f.bucket, f.key, f.checksum_value, f.checksum_type, f.file_name, f.source, f.type, f.file_size
FROM (SELECT (SELECT c.name || '___' || c.version FROM collections c WHERE c.cumulus_id = $2) AS collection_id,
  (SELECT e.url FROM executions e JOIN granules_executions ge ON ge.execution_cumulus_id = e.cumulus_id
   WHERE ge.granule_cumulus_id = $1 ORDER BY e."timestamp" DESC LIMIT 1) AS url,
  (SELECT p.name FROM pdrs p WHERE p.cumulus_id = $3) AS pdr_name,
  (SELECT v.name FROM providers v WHERE v.cumulus_id = $4) AS provider) r
LEFT JOIN files f ON f.granule_cumulus_id = $1
ORDER BY f.cumulus_id`

var completeGranuleV22SQL = strings.NewReplacer(
	"WHERE ge.granule_cumulus_id = $1 ", "WHERE ge.granule_cumulus_id = $1 AND ge.collection_cumulus_id = $2 ",
	"LEFT JOIN files f ON f.granule_cumulus_id = $1", "LEFT JOIN files f ON f.granule_cumulus_id = $1 AND f.collection_cumulus_id = $2",
).Replace(completeGranuleV21SQL)

var _ recovery.ProviderSource = (*DB)(nil)

// CollectionProviders reads the collection's CMR and metrics providers for
// the notifications, on a v22 schema that has collections.metrics_provider
// (v22.1.1 and later publish both, CUMULUS-4866); nil otherwise. Cached per
// collection: recovery never changes collections.
func (d *DB) CollectionProviders(ctx context.Context, collection *int64) (*recovery.Providers, error) {
	if !d.gen.Partitioned() {
		return nil, nil
	}
	has, ok := d.ids.Load("metrics_provider?")
	if !ok {
		var exists bool
		if err := d.q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_attribute
WHERE attrelid = to_regclass('collections') AND attname = 'metrics_provider' AND NOT attisdropped)`).Scan(&exists); err != nil {
			return nil, Classify(err)
		}
		d.ids.Store("metrics_provider?", exists)
		has = exists
	}
	if !has.(bool) {
		return nil, nil
	}
	if collection == nil {
		return &recovery.Providers{}, nil
	}
	key := "providers\x00" + strconv.FormatInt(*collection, 10)
	if v, ok := d.ids.Load(key); ok {
		return v.(*recovery.Providers), nil
	}
	var cmr, metrics *string
	if err := d.q.QueryRow(ctx, `SELECT cmr_provider, metrics_provider FROM collections WHERE cumulus_id = $1`, *collection).Scan(&cmr, &metrics); err != nil {
		return nil, Classify(err)
	}
	p := &recovery.Providers{CMR: deref(cmr), Metrics: deref(metrics)}
	d.ids.Store(key, p)
	return p, nil
}
