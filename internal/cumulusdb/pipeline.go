package cumulusdb

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/deadletter/deadletter/internal/recovery"
)

// A message's granule writes, and then their files, are independent of
// one another: v21 runs them side by side (Promise.allSettled), and a
// failed one does not stop the others. They are sent here in one pipeline
// (PostgreSQL's extended protocol, pgconn.Pipeline), one round trip for all
// of them, with a Sync after each statement: each is still its own
// implicit transaction, exactly as when it is sent alone, and a failure
// ends only its own statement, whose error is its own. (A pgx.Batch sends
// one Sync for the whole batch: one transaction, where a failed statement
// would undo the others.)

var _ recovery.GranuleBatcher = (*DB)(nil)

// pipeStmt is one statement of a pipeline. read gets its result (pgx.Rows,
// which it must close) and returns the statement's error as QueryRow's
// Scan, or Exec, would.
type pipeStmt struct {
	sql  string
	args []any
	read func(pgx.Rows) error
}

// scanOne is QueryRow(...).Scan(dest...) on a statement's rows.
func scanOne(dest ...any) func(pgx.Rows) error {
	return func(rows pgx.Rows) error {
		defer rows.Close()
		if !rows.Next() {
			if err := rows.Err(); err != nil {
				return err
			}
			return pgx.ErrNoRows
		}
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		rows.Close()
		return rows.Err()
	}
}

// execOnly is Exec: the statement's rows, if any, are discarded.
func execOnly(rows pgx.Rows) error {
	rows.Close()
	return rows.Err()
}

// pipeline runs stmts in order on one connection of the pool, in one
// round trip, each statement its own transaction. It returns each
// statement's error, unclassified, as running it alone would. Inside the
// dry run's transaction (no pool) the statements run one by one.
func (d *DB) pipeline(ctx context.Context, stmts []pipeStmt) []error {
	errs := make([]error, len(stmts))
	if len(stmts) == 0 {
		return errs
	}
	pool, ok := d.q.(*pgxpool.Pool)
	if !ok || len(stmts) == 1 {
		for i, st := range stmts {
			errs[i] = d.once(ctx, func(q querier) error {
				rows, err := q.Query(ctx, st.sql, st.args...)
				if err != nil {
					return err
				}
				return st.read(rows)
			})
		}
		return errs
	}
	fail := func(from int, err error) {
		for i := from; i < len(stmts); i++ {
			if errs[i] == nil {
				errs[i] = err
			}
		}
	}
	c, err := pool.Acquire(ctx)
	if err != nil {
		fail(0, err)
		return errs
	}
	defer c.Release()
	conn := c.Conn()
	// Each statement is prepared once per connection (as the statement
	// cache does for Query), named by its digest.
	sds := make([]*pgconn.StatementDescription, len(stmts))
	for i, st := range stmts {
		if sds[i], err = conn.Prepare(ctx, st.sql, st.sql); err != nil {
			var pgErr *pgconn.PgError
			if errors.As(err, &pgErr) {
				errs[i] = err // the statement itself: as Query would fail it
				continue
			}
			fail(0, err)
			return errs
		}
	}
	p := conn.PgConn().StartPipeline(ctx)
	sent := make([]bool, len(stmts))
	for i, st := range stmts {
		if sds[i] == nil {
			continue
		}
		var eqb pgx.ExtendedQueryBuilder
		if err := eqb.Build(conn.TypeMap(), sds[i], st.args); err != nil {
			errs[i] = err
			continue
		}
		p.SendQueryStatement(sds[i], eqb.ParamValues, eqb.ParamFormats, eqb.ResultFormats)
		p.SendPipelineSync()
		sent[i] = true
	}
	if err := p.Flush(); err != nil {
		_ = p.Close()
		fail(0, err)
		return errs
	}
	for i, st := range stmts {
		if !sent[i] {
			continue
		}
		res, err := p.GetResults()
		if err == nil {
			rr, ok := res.(*pgconn.ResultReader)
			if !ok {
				err = fmt.Errorf("pipeline: unexpected result %T", res)
			} else {
				err = st.read(pgx.RowsFromResultReader(conn.TypeMap(), rr))
			}
		}
		errs[i] = err
		// The statement's Sync: its transaction ends here. Without it, the
		// connection is gone and the commit's outcome unknown.
		res, serr := p.GetResults()
		if _, ok := res.(*pgconn.PipelineSync); serr != nil || !ok {
			if serr == nil {
				serr = fmt.Errorf("pipeline: unexpected result %T", res)
			}
			_ = p.Close()
			conn.PgConn().Close(context.Background())
			if errs[i] == nil || !isPgError(errs[i]) {
				errs[i] = serr
			}
			fail(i+1, serr)
			return errs
		}
	}
	if err := p.Close(); err != nil {
		conn.PgConn().Close(context.Background())
	}
	return errs
}

func isPgError(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr)
}

// Batching is false inside the dry run's transaction, whose granules are
// each judged in a savepoint of their own (GranuleScope), and when the
// writer's DB is not d itself but a wrapper watching its calls.
func (d *DB) Batching(db recovery.DB) bool {
	self, ok := db.(*DB)
	return ok && self == d && !d.inTx
}

// WriteGranules is WriteGranule for each write, in one round trip.
func (d *DB) WriteGranules(ctx context.Context, gws []*recovery.GranuleWrite) ([]recovery.GranuleResult, []error) {
	others := make([]*string, len(gws))
	ids := make([]*int64, len(gws))
	stmts := make([]pipeStmt, len(gws))
	for i, gw := range gws {
		sql := d.st.granuleInsert
		if sql == "" {
			sql = granuleStatement(d.st.granule, gw.Row.Status)
		}
		stmts[i] = pipeStmt{sql: sql, args: granuleArgs(gw), read: scanOne(&others[i], &ids[i])}
	}
	errs := d.pipeline(ctx, stmts)
	at := time.Now()
	res := make([]recovery.GranuleResult, len(gws))
	for i, gw := range gws {
		if d.isRace(ctx, errs[i]) && ctx.Err() == nil {
			// A row that exists (v22's insert) or a race with another
			// writer: re-run alone, the full statement.
			res[i], errs[i] = d.writeGranule(ctx, gw, "")
			continue
		}
		res[i], errs[i] = d.granuleResult(ctx, gw, others[i], ids[i], d.classifyAt(ctx, errs[i], at))
	}
	return res, errs
}

// WriteFilesBatch is WriteFiles for each granule, in one round trip (the
// file-by-file writes after the failures in one more).
func (d *DB) WriteFilesBatch(ctx context.Context, batch []recovery.FilesWrite) []error {
	stmts := make([]pipeStmt, len(batch))
	for i, fw := range batch {
		sql := d.st.filesInsert
		if sql == "" {
			sql = d.st.files
		}
		stmts[i] = pipeStmt{sql: sql, args: d.filesArgs(fw.GranuleCumulusID, fw.CollectionCumulusID, fw.Files), read: execOnly}
	}
	errs := d.pipeline(ctx, stmts)
	at := time.Now()
	var fails []filesFailure
	var failed []int
	for i, fw := range batch {
		switch {
		case errs[i] == nil:
		case d.isRace(ctx, errs[i]) && ctx.Err() == nil:
			errs[i] = d.writeFiles(ctx, fw.GranuleCumulusID, fw.CollectionCumulusID, fw.Files, "")
		default:
			fails = append(fails, filesFailure{fw.GranuleCumulusID, fw.Files, d.classifyAt(ctx, errs[i], at)})
			failed = append(failed, i)
		}
	}
	for j, err := range d.filesFallbacks(ctx, fails) {
		errs[failed[j]] = err
	}
	return errs
}

// UpsertPdrID is UpsertPdr that also returns the PDR's cumulus_id, whether
// the guard let the update through or kept the row (the statement reads
// the row as it was before it), so the granules need not look it up. The
// id is nil only when the row was inserted by another writer during the
// statement; a lookup then finds it.
func (d *DB) UpsertPdrID(ctx context.Context, r *recovery.PdrRow) (bool, *int64, error) {
	sql := d.st.pdrID[boolIndex(r.Status != nil && *r.Status == "running")]
	var written bool
	var id *int64
	err := d.one(ctx, func(q querier) error {
		var up, kept *int64
		err := q.QueryRow(ctx, sql, pdrArgs(r, r.ExecutionID)...).Scan(&up, &kept)
		written, id = up != nil, up
		if id == nil {
			id = kept
		}
		return err
	})
	return written, id, err
}

// withKeptID turns a PDR upsert ending in "RETURNING cumulus_id" into one
// returning the upserted id and the id the row had before the statement.
func withKeptID(sql string) string {
	return "WITH up AS (" + sql + ")\nSELECT (SELECT cumulus_id FROM up), (SELECT cumulus_id FROM pdrs WHERE name = $1)"
}

var (
	upsertPdrID        = withKeptID(upsertPdr)
	upsertRunningPdrID = withKeptID(upsertRunningPdr)
)

var _ recovery.RecordBatcher = (*DB)(nil)

// WriteGranuleRecords is WriteGranuleRecord for each write, in one round
// trip.
func (d *DB) WriteGranuleRecords(ctx context.Context, gws []*recovery.GranuleWrite) ([]recovery.GranuleResult, []*recovery.StoredGranule, []error) {
	scans := make([]granuleRecordScan, len(gws))
	stmts := make([]pipeStmt, len(gws))
	for i, gw := range gws {
		sql := d.st.granuleRecordInsert
		if sql == "" {
			sql = granuleStatement(d.st.granuleRecord, gw.Row.Status)
		}
		stmts[i] = pipeStmt{sql: sql, args: granuleArgs(gw), read: scanOne(scans[i].dest()...)}
	}
	errs := d.pipeline(ctx, stmts)
	at := time.Now()
	res := make([]recovery.GranuleResult, len(gws))
	stored := make([]*recovery.StoredGranule, len(gws))
	for i, gw := range gws {
		if d.isRace(ctx, errs[i]) && ctx.Err() == nil {
			// A row that exists (v22's insert) or a race with another
			// writer: re-run alone, the full statement.
			res[i], stored[i], errs[i] = d.writeGranuleRecord(ctx, gw, "")
			continue
		}
		res[i], stored[i], errs[i] = d.granuleRecordResult(ctx, gw, &scans[i], d.classifyAt(ctx, errs[i], at))
	}
	return res, stored, errs
}

// FilesAndComplete writes each notice's files and then reads its granule
// for its notification, in one round trip: each granule's files
// statement, then its CompleteGranule query, which reads what that
// statement committed. The file-by-file writes after the failures go in
// one more round trip (filesFallbacks); a files statement re-run alone (a
// race) is read again after it.
func (d *DB) FilesAndComplete(ctx context.Context, notices []recovery.GranuleNotice) ([]error, []error) {
	ferrs := make([]error, len(notices))
	cerrs := make([]error, len(notices))
	var stmts []pipeStmt
	filesAt := make([]int, len(notices)) // each notice's files statement in stmts, or -1
	completeAt := make([]int, len(notices))
	completeSQL := d.completeGranuleSQL()
	for i, n := range notices {
		filesAt[i] = -1
		if fw := n.Files; fw != nil {
			sql := d.st.filesInsert
			if sql == "" {
				sql = d.st.files
			}
			filesAt[i] = len(stmts)
			stmts = append(stmts, pipeStmt{sql: sql, args: d.filesArgs(fw.GranuleCumulusID, fw.CollectionCumulusID, fw.Files), read: execOnly})
		}
		completeAt[i] = len(stmts)
		stmts = append(stmts, pipeStmt{sql: completeSQL, args: completeGranuleArgs(n.Granule), read: readCompleteGranule(n.Granule)})
	}
	errs := d.pipeline(ctx, stmts)
	at := time.Now()
	var fails []filesFailure
	var failed []int
	for i, n := range notices {
		if f := filesAt[i]; f >= 0 && errs[f] != nil && !(d.isRace(ctx, errs[f]) && ctx.Err() == nil) {
			fails = append(fails, filesFailure{n.Files.GranuleCumulusID, n.Files.Files, d.classifyAt(ctx, errs[f], at)})
			failed = append(failed, i)
		}
	}
	for j, err := range d.filesFallbacks(ctx, fails) {
		ferrs[failed[j]] = err
	}
	for i, n := range notices {
		reread := false
		if f := filesAt[i]; f >= 0 {
			fw := n.Files
			if err := errs[f]; err != nil && ferrs[i] == nil {
				// A race: the full statement, alone.
				ferrs[i] = d.writeFiles(ctx, fw.GranuleCumulusID, fw.CollectionCumulusID, fw.Files, "")
				reread = true
			}
			if ferrs[i] != nil {
				continue
			}
		}
		cerrs[i] = Classify(errs[completeAt[i]])
		if reread {
			cerrs[i] = d.CompleteGranule(ctx, n.Granule)
		}
	}
	return ferrs, cerrs
}

// MarkGranulesFailed is, for each mark, MarkGranuleFailedRecord and the
// reads of its two notifications, every mark in one round trip: the
// update, then the CompleteGranule query with the references of the row
// the upsert returned (Written), which reads what the update committed.
// The failed row is the same granule: when the update returned the same
// references, that one read completes both rows, as two reads one after
// the other would (nothing of the message writes between them); when it
// did not (another writer changed the row), or the update met a race,
// the mark is made again, alone, and each row read on its own.
func (d *DB) MarkGranulesFailed(ctx context.Context, marks []recovery.FailedMark) []recovery.MarkedFailed {
	out := make([]recovery.MarkedFailed, len(marks))
	type scan struct {
		g      recovery.StoredGranule
		e, qf  *string
		read   recovery.StoredGranule // what CompleteGranule reads (completeFrom copies it)
		dest   []any
		exists bool
	}
	scans := make([]scan, len(marks))
	completeSQL := d.completeGranuleSQL()
	stmts := make([]pipeStmt, 0, 2*len(marks))
	for i, m := range marks {
		sc := &scans[i]
		sc.dest = granuleDest(&sc.g, &sc.e, &sc.qf)
		stmts = append(stmts, pipeStmt{sql: markGranuleFailedSQL, args: []any{m.GranuleID, m.CollectionID, m.ErrJSON},
			read: func(rows pgx.Rows) error {
				err := scanOne(sc.dest...)(rows)
				if errors.Is(err, pgx.ErrNoRows) {
					return nil
				}
				sc.exists = err == nil
				return err
			}})
		stmts = append(stmts, pipeStmt{sql: completeSQL, args: completeGranuleArgs(m.Written), read: readCompleteGranule(&sc.read)})
	}
	errs := d.pipeline(ctx, stmts)
	at := time.Now()
	for i, m := range marks {
		sc, o := &scans[i], &out[i]
		merr, rerr := errs[2*i], errs[2*i+1]
		if d.isRace(ctx, merr) && ctx.Err() == nil {
			o.Failed, o.Err = d.MarkGranuleFailedRecord(ctx, m.GranuleID, m.CollectionID, m.ErrJSON)
			if o.Err == nil && o.Failed != nil {
				o.Err = d.CompleteGranule(ctx, o.Failed)
			}
			if o.Err == nil {
				o.WrittenErr = d.CompleteGranule(ctx, m.Written)
			}
			continue
		}
		if o.Err = d.classifyAt(ctx, merr, at); o.Err != nil {
			continue
		}
		if sc.exists {
			f := sc.g
			f.Error, f.QueryFields = deref(sc.e), deref(sc.qf)
			o.Failed = &f
			if !sameReferences(o.Failed, m.Written) {
				if o.Err = d.CompleteGranule(ctx, o.Failed); o.Err == nil {
					o.WrittenErr = d.CompleteGranule(ctx, m.Written)
				}
				continue
			}
			if rerr == nil {
				completeFrom(o.Failed, &sc.read)
			}
			if o.Err = Classify(rerr); o.Err != nil {
				continue
			}
		}
		if o.WrittenErr = Classify(rerr); rerr == nil {
			completeFrom(m.Written, &sc.read)
		}
	}
	return out
}

// sameReferences reports whether CompleteGranule reads a and b with the
// same arguments (completeGranuleArgs).
func sameReferences(a, b *recovery.StoredGranule) bool {
	eq := func(x, y *int64) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	return a.CumulusID == b.CumulusID && a.CollectionCumulusID == b.CollectionCumulusID &&
		eq(a.PdrCumulusID, b.PdrCumulusID) && eq(a.ProviderCumulusID, b.ProviderCumulusID)
}

// completeFrom sets on g what CompleteGranule read into r.
func completeFrom(g, r *recovery.StoredGranule) {
	g.CollectionID, g.ExecutionURL, g.PdrName, g.Provider = r.CollectionID, r.ExecutionURL, r.PdrName, r.Provider
	g.Files = slices.Clone(r.Files)
}
