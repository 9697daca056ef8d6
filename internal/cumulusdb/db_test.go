package cumulusdb_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/recovery"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// The write constraints of Cumulus v21, against a real PostgreSQL.

func newDB(t testing.TB) (*pgxpool.Pool, *recovery.Writer) {
	t.Helper()
	url := testsupport.NewCumulusDatabase(t, []byte(`{"collections":[{"name":"C","version":"1"},{"name":"D","version":"2"}],
 "providers":[{"name":"P","protocol":"s3","host":"src-bucket"}]}`))
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	now := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	return pool, &recovery.Writer{DB: testsupport.CumulusDB(t, pool), Now: func() time.Time { return now }}
}

// message builds a Cumulus message for execution name, status, start time
// (ms) and granules (JSON objects).
func message(name, status string, start int64, extra string, granules ...string) gjson.Result {
	return gjson.Parse(fmt.Sprintf(`{"cumulus_meta":{"state_machine":"arn:aws:states:us-east-1:1:stateMachine:W","execution_name":%q,
 "workflow_start_time":%d%s},
 "meta":{"status":%q,"workflow_name":"W","collection":{"name":"C","version":"1"},"provider":{"id":"P","protocol":"s3","host":"src-bucket"}},
 "payload":{"granules":[%s]}}`, name, start, extra, status, strings.Join(granules, ",")))
}

func granule(id string, files string) string {
	return fmt.Sprintf(`{"granuleId":%q,"files":[%s]}`, id, files)
}

func file(bucket, key string, size int) string {
	return fmt.Sprintf(`{"bucket":%q,"key":%q,"fileName":%q,"size":%d}`, bucket, key, key, size)
}

func write(t *testing.T, w *recovery.Writer, m gjson.Result) *recovery.Result {
	t.Helper()
	res, err := w.Write(context.Background(), m)
	if err != nil {
		t.Fatalf("write: %v", err)
	}
	return res
}

func queryString(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) string {
	t.Helper()
	var s *string
	if err := pool.QueryRow(context.Background(), sql, args...).Scan(&s); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	if s == nil {
		return "<null>"
	}
	return *s
}

func TestRunningAfterCompletedIsDropped(t *testing.T) {
	pool, w := newDB(t)
	write(t, w, message("e1", "completed", 1000, "", granule("G1", file("b", "k1", 5))))
	res := write(t, w, message("e1", "running", 1000, "", granule("G1", "")))
	if res.Granules[0].Outcome != recovery.Dropped {
		t.Fatalf("running after completed: %+v", res.Granules)
	}
	if s := queryString(t, pool, `SELECT status FROM granules WHERE granule_id = 'G1'`); s != "completed" {
		t.Fatalf("status %s", s)
	}
	// The execution itself keeps its status: a late running only touches
	// created_at, updated_at, timestamp and original_payload.
	if s := queryString(t, pool, `SELECT status FROM executions WHERE arn LIKE '%:e1'`); s != "completed" {
		t.Fatalf("execution status %s", s)
	}
}

func TestOlderCreatedAtIsDropped(t *testing.T) {
	pool, w := newDB(t)
	write(t, w, message("e2", "completed", 2000, "", granule("G2", file("b", "k2", 5))))
	res := write(t, w, message("e3", "failed", 1000, "", granule("G2", file("b", "k2", 7))))
	if res.Granules[0].Outcome != recovery.Dropped {
		t.Fatalf("older failed: %+v", res.Granules)
	}
	if s := queryString(t, pool, `SELECT status FROM granules WHERE granule_id = 'G2'`); s != "completed" {
		t.Fatalf("status %s", s)
	}
	// A dropped granule writes no files.
	if s := queryString(t, pool, `SELECT file_size::text FROM files WHERE key = 'k2'`); s != "5" {
		t.Fatalf("file size %s", s)
	}
}

func TestCompletedOverwritesWhenNewerOrEqual(t *testing.T) {
	pool, w := newDB(t)
	write(t, w, message("e4", "failed", 1000, "", granule("G4", file("b", "k4", 5))))
	res := write(t, w, message("e5", "completed", 1000, "", granule("G4", file("b", "k4", 9))))
	if res.Granules[0].Outcome != recovery.Written {
		t.Fatalf("equal created_at: %+v", res.Granules)
	}
	if s := queryString(t, pool, `SELECT status || ' ' || product_volume FROM granules WHERE granule_id = 'G4'`); s != "completed 9" {
		t.Fatalf("row %s", s)
	}
	if s := queryString(t, pool, `SELECT count(*)::text FROM granules_executions`); s != "2" {
		t.Fatalf("links %s", s)
	}
}

func TestQueuedWithExistingExecutionIsDropped(t *testing.T) {
	pool, w := newDB(t)
	// Through messages a queued granule never has an execution written with
	// it (meta.status wins over granule.status, and an execution cannot be
	// queued), so the guard is driven through the adapter directly.
	write(t, w, message("e6", "running", 1000, "", granule("G6", "")))
	ctx := context.Background()
	var exec, coll int64
	if err := pool.QueryRow(ctx, `SELECT cumulus_id, collection_cumulus_id FROM executions WHERE arn LIKE '%:e6'`).Scan(&exec, &coll); err != nil {
		t.Fatal(err)
	}
	db := testsupport.CumulusDB(t, pool)
	gw := &recovery.GranuleWrite{ExecutionID: &exec, Row: recovery.GranuleRow{GranuleID: "G6", Status: "queued", ProducerGranuleID: "G6",
		CollectionID: coll, CreatedAt: time.UnixMilli(2000), UpdatedAt: time.Now(), Timestamp: time.Now()}}
	res, err := db.WriteGranule(ctx, gw)
	if err != nil || !res.Dropped {
		t.Fatalf("queued with an existing execution: %+v %v", res, err)
	}
	gw.ExecutionID = nil
	if res, err := db.WriteGranule(ctx, gw); err != nil || res.Dropped {
		t.Fatalf("queued without an execution: %+v %v", res, err)
	}
	if s := queryString(t, pool, `SELECT status FROM granules WHERE granule_id = 'G6'`); s != "queued" {
		t.Fatalf("status %s", s)
	}
}

func TestGranuleIDInAnotherCollectionFails(t *testing.T) {
	pool, w := newDB(t)
	write(t, w, message("e7", "completed", 1000, "", granule("G7", "")))
	m := message("e8", "completed", 2000, "", granule("G7", ""))
	m = gjson.Parse(strings.Replace(m.Raw, `"name":"C","version":"1"`, `"name":"D","version":"2"`, 1))
	_, err := w.Write(context.Background(), m)
	var agg *recovery.AggregateError
	if !errors.As(err, &agg) || !strings.Contains(err.Error(), "A granule already exists for granuleId: G7") {
		t.Fatalf("want the cross-collection error, got %v", err)
	}
	if s := queryString(t, pool, `SELECT count(*)::text FROM granules`); s != "1" {
		t.Fatalf("granules %s", s)
	}
}

func TestFilesReparentAndDelete(t *testing.T) {
	pool, w := newDB(t)
	write(t, w, message("e9", "completed", 1000, "", granule("G9a", file("b", "shared", 1)+","+file("b", "old", 2))))
	write(t, w, message("e10", "completed", 1000, "", granule("G9b", file("b", "shared", 3))))
	// The shared file moved to G9b; G9a keeps "old".
	if s := queryString(t, pool, `SELECT g.granule_id FROM files f JOIN granules g ON g.cumulus_id = f.granule_cumulus_id WHERE key = 'shared'`); s != "G9b" {
		t.Fatalf("shared file belongs to %s", s)
	}
	// G9a rewritten with only a new file: "old" is removed.
	write(t, w, message("e11", "completed", 1000, "", granule("G9a", file("b", "new", 4))))
	if s := queryString(t, pool, `SELECT string_agg(key, ',' ORDER BY key) FROM files f JOIN granules g ON g.cumulus_id = f.granule_cumulus_id WHERE g.granule_id = 'G9a'`); s != "new" {
		t.Fatalf("G9a files %s", s)
	}
	// An empty files list removes every file; no files key leaves them.
	write(t, w, message("e12", "completed", 1000, "", `{"granuleId":"G9b"}`))
	if s := queryString(t, pool, `SELECT count(*)::text FROM files WHERE key = 'shared'`); s != "1" {
		t.Fatalf("no files key removed files")
	}
	write(t, w, message("e13", "completed", 1000, "", granule("G9b", "")))
	if s := queryString(t, pool, `SELECT count(*)::text FROM files WHERE key = 'shared'`); s != "0" {
		t.Fatalf("empty files list kept files")
	}
}

func TestFileWriteFailureMarksGranuleFailed(t *testing.T) {
	pool, w := newDB(t)
	// A file without a key (discovered, not yet ingested) fails its insert;
	// Cumulus marks the granule failed and still counts the message
	// written. v21 writes the files one by one and keeps the good one; v22
	// writes them in one transaction and keeps none.
	res := write(t, w, message("e14", "completed", 1000, "", granule("G14", `{"bucket":"b","fileName":"x","size":1}`+","+file("b", "good", 2))))
	if res.Granules[0].FilesError == "" {
		t.Fatalf("no files error: %+v", res.Granules)
	}
	if s := queryString(t, pool, `SELECT status FROM granules WHERE granule_id = 'G14'`); s != "failed" {
		t.Fatalf("status %s", s)
	}
	if s := queryString(t, pool, `SELECT error->>'errors' FROM granules WHERE granule_id = 'G14'`); !strings.Contains(s, "Failed writing files to PostgreSQL.") {
		t.Fatalf("error %s", s)
	}
	want := "1"
	if testsupport.Generation(t).Partitioned() {
		want = "0"
	}
	if s := queryString(t, pool, `SELECT count(*)::text FROM files WHERE key = 'good'`); s != want {
		t.Fatalf("%s files with the good key, want %s", s, want)
	}
}

func TestPdrProgressGuard(t *testing.T) {
	pool, w := newDB(t)
	pdr := func(running, completed int) string {
		return fmt.Sprintf(`{"pdr":{"name":"P1.PDR"},"running":[%s],"completed":[%s]}`,
			strings.TrimSuffix(strings.Repeat(`"a",`, running), ","), strings.TrimSuffix(strings.Repeat(`"b",`, completed), ","))
	}
	m := func(name string, running, completed int) gjson.Result {
		return gjson.Parse(fmt.Sprintf(`{"cumulus_meta":{"state_machine":"arn:aws:states:us-east-1:1:stateMachine:W","execution_name":%q,"workflow_start_time":1000},
 "meta":{"status":"running","workflow_name":"W","collection":{"name":"C","version":"1"},"provider":{"id":"P","protocol":"s3","host":"h"}},
 "payload":%s}`, name, pdr(running, completed)))
	}
	write(t, w, m("p1", 1, 1)) // 50%
	res := write(t, w, m("p1", 3, 1))
	if res.Pdr != recovery.Dropped {
		t.Fatalf("less progress, same execution: %s", res.Pdr)
	}
	if s := queryString(t, pool, `SELECT progress::text FROM pdrs`); s != "50" {
		t.Fatalf("progress %s", s)
	}
	if res := write(t, w, m("p1", 1, 3)); res.Pdr != recovery.Written {
		t.Fatalf("more progress: %s", res.Pdr)
	}
	if res := write(t, w, m("p2", 3, 1)); res.Pdr != recovery.Written {
		t.Fatalf("another execution: %s", res.Pdr)
	}
}

func TestUnmetRequirementsWriteNothing(t *testing.T) {
	pool, w := newDB(t)
	m := message("e15", "completed", 1000, `,"parentExecutionArn":"arn:aws:states:us-east-1:1:execution:W:missing"`, granule("G15", ""))
	_, err := w.Write(context.Background(), m)
	var unmet *recovery.UnmetRequirementsError
	if !errors.As(err, &unmet) {
		t.Fatalf("want UnmetRequirementsError, got %v", err)
	}
	if s := queryString(t, pool, `SELECT (SELECT count(*) FROM executions) + (SELECT count(*) FROM granules)`); s != "0" {
		t.Fatalf("rows written: %s", s)
	}
}

func TestSchemaInvalidGranuleMarksRowFailed(t *testing.T) {
	pool, w := newDB(t)
	write(t, w, message("e16", "completed", 1000, "", granule("G16", file("b", "k16", 1))))
	bad := `{"granuleId":"G16","files":[{"bucket":"b","key":"k16","checksum":12345,"size":1}]}`
	_, err := w.Write(context.Background(), message("e17", "completed", 2000, "", bad))
	var sv *recovery.SchemaValidationError
	if !errors.As(err, &sv) {
		t.Fatalf("want SchemaValidationError, got %v", err)
	}
	if s := queryString(t, pool, `SELECT status FROM granules WHERE granule_id = 'G16'`); s != "failed" {
		t.Fatalf("status %s", s)
	}
	// The errors string v21 stores: the message's (empty) exception, then the
	// thrown SchemaValidationError with ajv's error list as its detail.
	want := `[{},{"Error":"Failed writing granule record due to SchemaValdationError.","Cause":{"name":"SchemaValidationError","detail":"[{\"keyword\":\"type\",\"dataPath\":\".files[0].checksum\",\"schemaPath\":\"#/properties/files/items/properties/checksum/type\",\"params\":{\"type\":\"string\"},\"message\":\"should be string\"}]"}}]`
	if s := queryString(t, pool, `SELECT error->>'errors' FROM granules WHERE granule_id = 'G16'`); s != want {
		t.Fatalf("error\n got %s\nwant %s", s, want)
	}
}

func TestDryRunTransactionChangesNothing(t *testing.T) {
	pool, w := newDB(t)
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dry := *w
	dry.DB = testsupport.CumulusDB(t, pool).InTx(tx)
	// A failing file insert inside the transaction must not end it.
	res, err := dry.Write(ctx, message("e18", "completed", 1000, "", granule("G18", `{"bucket":"b","size":1}`)))
	if err != nil || res.Granules[0].Outcome != recovery.Written || res.Granules[0].FilesError == "" {
		t.Fatalf("dry write: %+v %v", res, err)
	}
	_ = tx.Rollback(ctx)
	if s := queryString(t, pool, `SELECT (SELECT count(*) FROM executions) + (SELECT count(*) FROM granules) + (SELECT count(*) FROM files)`); s != "0" {
		t.Fatalf("rows left by a dry run: %s", s)
	}
}
