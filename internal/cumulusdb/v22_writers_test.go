package cumulusdb_test

// The Cumulus v22 write path (v22.go, statements.go, errors.go) against
// other writers, hostile values and schemas it does not know. Each test
// says what must hold and why it holds.

import (
	"context"
	"fmt"
	"math/rand"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/cumulusdb"
	"github.com/deadletter/deadletter/internal/recovery"
	"github.com/deadletter/deadletter/internal/testsupport"
)

const (
	mar2024 = int64(1709251200000) // 2024-03-01, in executions_2024_q1
	jun2023 = int64(1685577600000) // 2023-06-01: no quarter, executions_default
)

const writersSeed = `{"collections":[{"name":"C","version":"1"},{"name":"D","version":"2"}],
 "providers":[{"name":"P","protocol":"s3","host":"src-bucket"}]}`

// newV22WritersDB is newV22DB that also returns the database's URL.
func newV22WritersDB(t *testing.T) (string, *pgxpool.Pool, *recovery.Writer) {
	t.Helper()
	url := testsupport.NewCumulusDatabaseOf(t, cumulusdb.V22_3, []byte(writersSeed))
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	now := time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC)
	return url, pool, &recovery.Writer{DB: cumulusdb.NewFor(pool, cumulusdb.V22_3), Now: func() time.Time { return now }}
}

type writeOutcome struct {
	res *recovery.Result
	err error
}

// writeAsync writes m in a goroutine; the outcome arrives on the channel.
func writeAsync(w *recovery.Writer, m gjson.Result) <-chan writeOutcome {
	ch := make(chan writeOutcome, 1)
	go func() {
		res, err := w.Write(context.Background(), m)
		ch <- writeOutcome{res, err}
	}()
	return ch
}

// waitBlocked waits until a backend of this database waits on a lock
// while running a statement matching like.
func waitBlocked(t *testing.T, pool *pgxpool.Pool, like string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		var n int
		if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE $1`, like).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no backend blocked on a lock running %s", like)
}

func granuleOutcomes(res *recovery.Result) string {
	if res == nil {
		return "<no result>"
	}
	var s []string
	for _, g := range res.Granules {
		s = append(s, fmt.Sprintf("%s:%s(%s%s)", g.GranuleID, g.Outcome, g.Error, g.FilesError))
	}
	return strings.Join(s, " ")
}

// No lost update: the granule guard "created_at not newer than the
// message's" is judged on the row the update writes, as Cumulus's own
// `UPDATE granules ... WHERE granule_id = $1 AND created_at <= $2` is
// (READ COMMITTED re-checks an UPDATE's WHERE on the row another writer
// has just committed). When another writer (Cumulus, a second dla recover,
// the db-writer) commits a newer version of the granule while dla's
// statement waits for the row, dla's older message is dropped. (The guards
// were once judged only on the statement's snapshot, and the older message
// overwrote the newer row.)
func TestV22GranuleGuardsAreJudgedOnTheRowAsCommitted(t *testing.T) {
	_, pool, w := newV22WritersDB(t)
	ctx := context.Background()
	write(t, w, message("r1", "completed", feb2024, "", granule("GR", "")))

	// The other writer: a newer message of GR (2024-05-01, failed), not yet
	// committed.
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `UPDATE granules SET status = 'failed', created_at = to_timestamp($1::bigint / 1000.0)
WHERE granule_id = 'GR'`, may2024); err != nil {
		t.Fatal(err)
	}
	// dla writes an older message of GR (2024-03-01).
	ch := writeAsync(w, message("r2", "completed", mar2024, "", granule("GR", "")))
	waitBlocked(t, pool, "%WITH target AS%")
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	o := <-ch
	if o.err != nil {
		t.Fatalf("write: %v", o.err)
	}
	got := queryString(t, pool, `SELECT status || ' ' || to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') FROM granules WHERE granule_id = 'GR'`)
	if got != "failed 2024-05-01" || o.res.Granules[0].Outcome != recovery.Dropped {
		t.Fatalf("an older message overwrote the newer committed granule: row %q, outcome %s; want \"failed 2024-05-01\" and dropped", got, granuleOutcomes(o.res))
	}
}

// The same guard without a race: an older message is dropped (pins the
// non-racing half of the property above).
func TestV22OlderGranuleWithoutARaceIsDropped(t *testing.T) {
	_, pool, w := newV22WritersDB(t)
	write(t, w, message("s1", "failed", may2024, "", granule("GS", "")))
	res := write(t, w, message("s2", "completed", mar2024, "", granule("GS", "")))
	if res.Granules[0].Outcome != recovery.Dropped {
		t.Fatalf("older message: %s", granuleOutcomes(res))
	}
	if s := queryString(t, pool, `SELECT status FROM granules WHERE granule_id = 'GS'`); s != "failed" {
		t.Fatalf("status %s", s)
	}
}

// A race is retried, not a stop: another writer that moves an execution
// to another partition (a new created_at: Cumulus's own upsert, or a
// second dla run) while dla's update of the same execution waits for the
// row makes PostgreSQL raise 40001 "tuple to be updated was already moved
// to another partition due to concurrent update". DB.one re-runs the
// statement (IsRace), which finds the row in its new partition; the run
// goes on.
func TestV22ExecutionMovedByAnotherWriterIsRetried(t *testing.T) {
	_, pool, w := newV22WritersDB(t)
	ctx := context.Background()
	write(t, w, message("m1", "running", feb2024, "", granule("GM", "")))
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `UPDATE executions SET created_at = to_timestamp($1::bigint / 1000.0) WHERE arn LIKE '%:m1'`, may2024); err != nil {
		t.Fatal(err)
	}
	ch := writeAsync(w, message("m1", "completed", may2024, "", granule("GM", "")))
	waitBlocked(t, pool, "%executions%") // its insert (v22 tries it first) or its update
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	o := <-ch
	if o.err != nil {
		t.Fatalf("a race with another writer failed the write (transient %v, so the run stops): %v", recovery.IsTransient(o.err), o.err)
	}
	if s := queryString(t, pool, `SELECT status FROM executions WHERE arn LIKE '%:m1'`); s != "completed" {
		t.Fatalf("status %s", s)
	}
}

// The same race on files: re-pointing a file to another granule of the
// collection moves it to another hash partition of files (PARTITION BY
// HASH (granule_cumulus_id)). Two writers re-pointing the same file race
// the same way, and dla's files statement, which gets 40001, is re-run.
func TestV22FileMovedByAnotherWriterIsRetried(t *testing.T) {
	_, pool, w := newV22WritersDB(t)
	ctx := context.Background()
	write(t, w, message("f1", "completed", feb2024, "", granule("GF1", file("b", "moving", 1))))
	for i := 2; i <= 9; i++ {
		write(t, w, message(fmt.Sprintf("f%d", i), "completed", feb2024, "", granule(fmt.Sprintf("GF%d", i), "")))
	}
	// The other writer re-points the file to a granule whose files live in
	// another partition, and has not committed yet.
	var tx interface {
		Commit(context.Context) error
		Rollback(context.Context) error
	}
	for i := 2; i <= 9 && tx == nil; i++ {
		t2, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var moved bool
		if err := t2.QueryRow(ctx, `WITH before AS (SELECT tableoid FROM files WHERE key = 'moving'),
u AS (UPDATE files SET granule_cumulus_id = (SELECT cumulus_id FROM granules WHERE granule_id = $1) WHERE key = 'moving' RETURNING tableoid)
SELECT (SELECT tableoid FROM u) <> (SELECT tableoid FROM before)`, fmt.Sprintf("GF%d", i)).Scan(&moved); err != nil {
			t.Fatal(err)
		}
		if moved {
			tx = t2
		} else {
			_ = t2.Rollback(ctx)
		}
	}
	if tx == nil {
		t.Skip("no granule hashes to another files partition")
	}
	defer tx.Rollback(ctx)
	ch := writeAsync(w, message("f10", "completed", feb2024, "", granule("GF10", file("b", "moving", 10))))
	waitBlocked(t, pool, "%files%") // its insert or its update
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	o := <-ch
	if o.err != nil {
		t.Fatalf("a race with another writer failed the write (transient %v, so the run stops): %v", recovery.IsTransient(o.err), o.err)
	}
	if fe := o.res.Granules[0].FilesError; fe != "" {
		t.Fatalf("files error from a race: %s", fe)
	}
	if s := queryString(t, pool, `SELECT g.granule_id FROM files f JOIN granules g ON g.cumulus_id = f.granule_cumulus_id WHERE f.key = 'moving'`); s != "GF10" {
		t.Fatalf("file belongs to %s", s)
	}
}

// The environment's, not the message's: a NOT NULL column that the writes
// do not name (a later Cumulus migration, as v22.0 did with
// collections.cmr_provider), added while a run goes on, fails every
// granule insert with 23502: no message can ever pass it, so it stops the
// run with the object in place (Detect refuses such a schema before a run
// starts). A 23502 on a column the write names, files.key of a discovered
// file, stays the message's: TestFileWriteFailureMarksGranuleFailed.
func TestV22NotNullColumnTheWritesDoNotNameIsTheEnvironments(t *testing.T) {
	_, pool, w := newV22WritersDB(t)
	if _, err := pool.Exec(context.Background(), `ALTER TABLE granules ADD COLUMN mission text NOT NULL`); err != nil {
		t.Fatal(err)
	}
	_, err := w.Write(context.Background(), message("n1", "completed", feb2024, "", granule("GN", "")))
	if err == nil || !recovery.IsTransient(err) {
		t.Fatalf("a NOT NULL column no write supplies: want a transient (environment) error, got transient=%v: %v", recovery.IsTransient(err), err)
	}
}

// A privilege on a guard table revoked after the preflight (the
// trigger writes the guard table as the writing role) is the
// environment's: transient, naming the privilege, never the message's.
func TestV22GuardPrivilegeRevokedAfterPreflightIsTheEnvironments(t *testing.T) {
	url, pool, _ := newV22WritersDB(t)
	ctx := context.Background()
	role := "dl_guard_" + strings.ToLower(testsupport.RandomHex(4))
	if _, err := pool.Exec(ctx, `CREATE ROLE `+role+` LOGIN;
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO `+role+`;
GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO `+role); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		pool.Close()
		c, err := pgxpool.New(context.Background(), url)
		if err == nil {
			_, _ = c.Exec(context.Background(), `REASSIGN OWNED BY `+role+` TO postgres; DROP OWNED BY `+role)
			c.Close()
		}
		a, err := pgxpool.New(context.Background(), testsupport.DatabaseURL(t))
		if err == nil {
			_, _ = a.Exec(context.Background(), `DROP ROLE IF EXISTS `+role)
			a.Close()
		}
	})
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.User = role
	db, err := cumulusdb.Open(ctx, cfg)
	if err != nil {
		t.Fatalf("preflight: %v", err)
	}
	defer db.Close()
	w := &recovery.Writer{DB: db.DB(), Now: func() time.Time { return time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC) }}
	write(t, w, message("p1", "completed", feb2024, "", granule("GP1", file("b", "p1", 1))))
	if _, err := pool.Exec(ctx, `REVOKE INSERT ON granules_global_unique FROM `+role); err != nil {
		t.Fatal(err)
	}
	_, err = w.Write(ctx, message("p2", "completed", feb2024, "", granule("GP2", "")))
	if !recovery.IsTransient(err) || !strings.Contains(err.Error(), "42501") {
		t.Fatalf("want a transient 42501, got transient=%v: %v", recovery.IsTransient(err), err)
	}
}

// Lock_timeout (another writer holding the granule) is the
// environment's: transient, never the message's.
func TestV22LockTimeoutIsTheEnvironments(t *testing.T) {
	url, pool, w := newV22WritersDB(t)
	ctx := context.Background()
	write(t, w, message("l1", "completed", feb2024, "", granule("GL", "")))
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["lock_timeout"] = "200ms"
	short, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer short.Close()
	w.DB = cumulusdb.NewFor(short, cumulusdb.V22_3)
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `UPDATE granules SET status = 'failed' WHERE granule_id = 'GL'`); err != nil {
		t.Fatal(err)
	}
	_, err = w.Write(ctx, message("l2", "completed", may2024, "", granule("GL", "")))
	if !recovery.IsTransient(err) {
		t.Fatalf("lock_timeout: want transient, got %v", err)
	}
}

// Unusual granule ids. Quotes, backslashes, unicode and a long id
// are written and read back exactly; an id too long for the guard
// table's index (54000) and one holding NUL (22021) are the message's
// errors, never the environment's (which would stop every run forever on
// that object).
func TestV22UnusualGranuleIDs(t *testing.T) {
	_, pool, w := newV22WritersDB(t)
	ctx := context.Background()
	rng := rand.New(rand.NewSource(1))
	randomID := func(n int) string {
		const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
		b := make([]byte, n)
		for i := range b {
			b[i] = letters[rng.Intn(len(letters))]
		}
		return string(b)
	}
	for i, id := range []string{`G'quote"dq\back`, "G_ünï_çødé_日本語_🚀", "G " + randomID(2000)} {
		j, _ := jsonString(id)
		res := write(t, w, message(fmt.Sprintf("u%d", i), "completed", feb2024, "", fmt.Sprintf(`{"granuleId":%s,"files":[]}`, j)))
		if res.Granules[0].Outcome != recovery.Written {
			t.Fatalf("%q: %s", id, granuleOutcomes(res))
		}
		if s := queryString(t, pool, `SELECT count(*)::text FROM granules g JOIN granules_global_unique u USING (granule_id) WHERE g.granule_id = $1`, id); s != "1" {
			t.Fatalf("%q: %s rows with their guard row", id, s)
		}
	}
	for i, raw := range []string{`"` + randomID(5000) + `"`, `"G\u0000nul"`} {
		_, err := w.Write(ctx, message(fmt.Sprintf("v%d", i), "completed", feb2024, "", `{"granuleId":`+raw+`,"files":[]}`))
		if err == nil || recovery.IsTransient(err) {
			t.Fatalf("granule id %.40s...: want the message's error, got transient=%v: %v", raw, recovery.IsTransient(err), err)
		}
	}
}

func jsonString(s string) (string, error) {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String(), nil
}

// An execution first written with a created_at no quarter holds
// (executions_default), then re-sent with one in a quarter, moves to the
// quarter keeping its cumulus_id and one guard row; its PDR and granule
// links follow it (ON UPDATE CASCADE), and a later PDR write re-points
// execution_created_at to a second execution.
func TestV22ExecutionFromDefaultPartitionToQuarter(t *testing.T) {
	_, pool, w := newV22WritersDB(t)
	pdr := `"pdr":{"name":"PD.PDR","PANSent":false,"PANmessage":"N/A"},`
	m := func(name string, start int64) gjson.Result {
		return gjson.Parse(strings.Replace(message(name, "completed", start, "", granule("GD", file("b", "kd", 1))).Raw, `"payload":{`, `"payload":{`+pdr, 1))
	}
	write(t, w, m("d1", jun2023))
	if s := queryString(t, pool, `SELECT tableoid::regclass::text FROM executions`); s != "executions_default" {
		t.Fatalf("first write in %s", s)
	}
	write(t, w, m("d1", may2024))
	if s := queryString(t, pool, `SELECT tableoid::regclass::text || ' ' || (SELECT count(*) FROM executions_global_unique) FROM executions`); s != "executions_2024_q2 1" {
		t.Fatalf("after the re-send: %s", s)
	}
	check := `SELECT (SELECT count(*) FROM pdrs p JOIN executions x ON x.cumulus_id = p.execution_cumulus_id AND x.created_at = p.execution_created_at)::text
 || ' ' || (SELECT count(*) FROM granules_executions ge JOIN executions x ON x.cumulus_id = ge.execution_cumulus_id AND x.created_at = ge.execution_created_at)::text`
	if s := queryString(t, pool, check); s != "1 1" {
		t.Fatalf("references that follow the execution: %s", s)
	}
	write(t, w, m("d2", may2024+1000))
	if s := queryString(t, pool, `SELECT x.arn FROM pdrs p JOIN executions x ON x.cumulus_id = p.execution_cumulus_id AND x.created_at = p.execution_created_at`); !strings.HasSuffix(s, ":d2") {
		t.Fatalf("pdr's execution %s", s)
	}
}

// A child whose parent execution lives in another partition
// carries the parent's created_at; when the parent is later moved by a
// new created_at (no ON UPDATE action on executions_parent_cumulus_id_foreign,
// as in v22's migration) the parent's write is refused as the message's
// error, exactly as Cumulus's own update would be, and nothing moves.
func TestV22ParentInAnotherPartition(t *testing.T) {
	_, pool, w := newV22WritersDB(t)
	write(t, w, message("parent", "completed", feb2024, "", granule("GPa", "")))
	parentArn := queryString(t, pool, `SELECT arn FROM executions WHERE arn LIKE '%:parent'`)
	write(t, w, message("child", "completed", may2024, `,"parentExecutionArn":"`+parentArn+`"`, granule("GCh", "")))
	if s := queryString(t, pool, `SELECT (c.parent_created_at = p.created_at)::text || ' ' || c.tableoid::regclass::text || ' ' || p.tableoid::regclass::text
FROM executions c JOIN executions p ON p.cumulus_id = c.parent_cumulus_id`); s != "true executions_2024_q2 executions_2024_q1" {
		t.Fatalf("child's parent: %s", s)
	}
	_, err := w.Write(context.Background(), message("parent", "completed", mar2024, "", granule("GPa", "")))
	if err == nil || recovery.IsTransient(err) {
		t.Fatalf("moving a parent with children: want the message's error, got transient=%v %v", recovery.IsTransient(err), err)
	}
	if s := queryString(t, pool, `SELECT to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') FROM executions WHERE arn = $1`, parentArn); s != "2024-02-01" {
		t.Fatalf("parent moved to %s", s)
	}
}

// The dry run's transaction on v22 leaves no row, no guard-table
// row, and no link; its outcomes equal the real run's.
func TestV22DryRunLeavesNothingAndMatchesRealRun(t *testing.T) {
	_, pool, w := newV22WritersDB(t)
	ctx := context.Background()
	write(t, w, message("y0", "completed", feb2024, "", granule("GY1", file("b", "shared", 1))))
	msgs := []gjson.Result{
		message("y1", "completed", may2024, "", granule("GY1", file("b", "y1", 1)), granule("GY2", file("b", "shared", 2)), granule("GY2", file("b", "y2", 3))),
		inCollection(message("y2", "completed", may2024, "", granule("GY1", ""), granule("GY3", file("b", "y1", 4))), "D", "2"),
		message("y3", "running", feb2024, "", granule("GY1", "")),
	}
	counts := `SELECT (SELECT count(*) FROM executions) || ' ' || (SELECT count(*) FROM granules) || ' ' || (SELECT count(*) FROM files)
 || ' ' || (SELECT count(*) FROM granules_executions) || ' ' || (SELECT count(*) FROM executions_global_unique)
 || ' ' || (SELECT count(*) FROM granules_global_unique) || ' ' || (SELECT count(*) FROM files_global_unique)`
	before := queryString(t, pool, counts)
	summary := func(res *recovery.Result, err error) string {
		if err != nil {
			return "error " + recovery.Class(err) + ": " + err.Error()
		}
		return res.Execution + " " + granuleOutcomes(res)
	}
	var dry []string
	for _, m := range msgs {
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		d := *w
		d.DB = cumulusdb.NewFor(pool, cumulusdb.V22_3).InTx(tx)
		res, err := d.Write(ctx, m)
		dry = append(dry, summary(res, err))
		_ = tx.Rollback(ctx)
	}
	if after := queryString(t, pool, counts); after != before {
		t.Fatalf("the dry run left rows: %s, was %s", after, before)
	}
	// Only the first message: each dry message sees the database as it was.
	res, err := w.Write(ctx, msgs[0])
	if real := summary(res, err); real != dry[0] {
		t.Fatalf("dry %q, real %q", dry[0], real)
	}
}

// A stress of two writers on the same executions, granules and files (the
// db-writer and a dla recover, or two recovers of two archives): every
// write must succeed (a race is retried, never reported, never stops the
// run), and afterwards each granule holds exactly its files and each
// guard table matches its table.
func TestV22TwoWritersSameRows(t *testing.T) {
	_, pool, w := newV22WritersDB(t)
	ctx := context.Background()
	const rounds = 60
	var mu sync.Mutex
	var failures []string
	var wg sync.WaitGroup
	for writer := 0; writer < 2; writer++ {
		wg.Add(1)
		go func(writer int) {
			defer wg.Done()
			ww := *w
			ww.DB = cumulusdb.NewFor(pool, cumulusdb.V22_3)
			rng := rand.New(rand.NewSource(int64(writer)))
			for i := 0; i < rounds; i++ {
				// executions x0..x3 re-sent with moving created_at; granules
				// G0..G5 re-pointing files k0..k5 among them.
				start := feb2024 + int64(rng.Intn(4))*int64(90*24*3600*1000)
				var gs []string
				for g := 0; g < 3; g++ {
					gid := rng.Intn(6)
					var fs []string
					for f := 0; f < 2; f++ {
						fs = append(fs, file("b", fmt.Sprintf("k%d", rng.Intn(6)), writer*1000+i))
					}
					gs = append(gs, granule(fmt.Sprintf("G%d", gid), strings.Join(fs, ",")))
				}
				status := []string{"running", "completed", "failed"}[rng.Intn(3)]
				m := message(fmt.Sprintf("x%d", rng.Intn(4)), status, start, "", gs...)
				res, err := ww.Write(ctx, m)
				if err != nil {
					mu.Lock()
					failures = append(failures, fmt.Sprintf("writer %d round %d: transient=%v %v", writer, i, recovery.IsTransient(err), err))
					mu.Unlock()
					continue
				}
				for _, g := range res.Granules {
					if g.FilesError != "" || (g.Outcome == recovery.Failed) {
						mu.Lock()
						failures = append(failures, fmt.Sprintf("writer %d round %d: %s %s %s %s", writer, i, g.GranuleID, g.Outcome, g.Error, g.FilesError))
						mu.Unlock()
					}
				}
			}
		}(writer)
	}
	wg.Wait()
	if len(failures) > 0 {
		kinds := map[string]bool{}
		for _, f := range failures {
			if i := strings.Index(f, "SQLSTATE"); i >= 0 {
				kinds[f[i:]] = true
			} else {
				kinds[f] = true
			}
		}
		t.Errorf("%d of %d writes failed from races (kinds %v), first: %s", len(failures), 2*rounds, kinds, strings.Join(failures[:min(3, len(failures))], "\n"))
	}
	consistency := `SELECT (SELECT count(*) FROM executions) = (SELECT count(*) FROM executions_global_unique)
 AND (SELECT count(*) FROM granules) = (SELECT count(*) FROM granules_global_unique)
 AND (SELECT count(*) FROM files) = (SELECT count(*) FROM files_global_unique)`
	if s := queryString(t, pool, `SELECT (`+consistency+`)::text`); s != "true" {
		t.Errorf("guard tables out of step with their tables")
	}
}

// A race never fails the message: the granule statement reads the
// execution's created_at (for granules_executions.execution_created_at)
// with a key-share lock. When another writer moves the execution to
// another partition (a new created_at) after the statement's snapshot,
// taking the lock fails with 40001 and the statement is re-run on the row
// where it is now, instead of the link's foreign key matching no row
// (23503, the message's: the object would move to failed-sqs/ for a race).
// A trigger that slows the granule's insert makes the race certain (test
// scaffolding on the database, not on the code). The message is written,
// its granule linked with the execution's current created_at.
func TestV22LinkToExecutionMovedByAnotherWriter(t *testing.T) {
	_, pool, w := newV22WritersDB(t)
	ctx := context.Background()
	write(t, w, message("k1", "completed", feb2024, "", granule("GK1", "")))
	if _, err := pool.Exec(ctx, `CREATE FUNCTION slow_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN IF NEW.granule_id = 'GK2' THEN PERFORM pg_sleep(1); END IF; RETURN NEW; END $$;
CREATE TRIGGER slow_insert BEFORE INSERT ON granules FOR EACH ROW EXECUTE FUNCTION slow_insert()`); err != nil {
		t.Fatal(err)
	}
	ch := writeAsync(w, message("k1", "completed", feb2024, "", granule("GK2", "")))
	deadline := time.Now().Add(10 * time.Second)
	for {
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event = 'PgSleep'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the granule's insert never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The other writer moves the execution (a new created_at) and commits.
	if _, err := pool.Exec(ctx, `UPDATE executions SET created_at = to_timestamp($1::bigint / 1000.0) WHERE arn LIKE '%:k1'`, may2024); err != nil {
		t.Fatal(err)
	}
	o := <-ch
	if o.err != nil {
		t.Fatalf("a race with another writer failed the message (transient %v: %s): %v", recovery.IsTransient(o.err),
			map[bool]string{true: "the run stops", false: "moved to failed-sqs/"}[recovery.IsTransient(o.err)], o.err)
	}
	if s := queryString(t, pool, `SELECT count(*)::text FROM granules_executions ge JOIN granules g ON g.cumulus_id = ge.granule_cumulus_id
JOIN executions x ON x.cumulus_id = ge.execution_cumulus_id AND x.created_at = ge.execution_created_at WHERE g.granule_id = 'GK2'`); s != "1" {
		t.Fatalf("links %s", s)
	}
}
