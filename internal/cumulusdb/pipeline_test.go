package cumulusdb_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/cumulusdb"
	"github.com/deadletter/deadletter/internal/recovery"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// TestBatchedWritesMatchOneByOne writes the same messages into two
// databases, one writer sending a message's granules and files in
// pipelines (the default) and one sending every statement alone
// (oneByOne), and requires the same
// result and error for every message and the same rows in every table.
// The messages hold what a pipeline could get wrong: a granule refused for
// another collection's granule_id, a files statement that fails (the files
// then written one by one, the granule marked failed) between granules
// that succeed, writes dropped by the guards, a file two granules share, a
// granule listed twice, and a PDR kept by its guard whose id the granules
// need. The batched writer must also make fewer round trips (counted by a
// proxy), so the test cannot pass with batching silently off. With
// notifications, both writers must also publish the same notifications in
// the same order (the batched one writing its granules' rows, then their
// files with the reads for the notifications, at once).
func TestBatchedWritesMatchOneByOne(t *testing.T) {
	for _, notify := range []bool{false, true} {
		t.Run(fmt.Sprintf("notifications %v", notify), func(t *testing.T) { batchedWritesMatchOneByOne(t, notify) })
	}
}

func batchedWritesMatchOneByOne(t *testing.T, notify bool) {
	seed := []byte(`{"collections":[{"name":"C","version":"1"},{"name":"D","version":"2"}],
 "providers":[{"name":"P","protocol":"s3","host":"src-bucket"}]}`)
	now := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	runStart := time.Now().Add(-time.Second)
	open := func(unbatched bool) (string, *recovery.Writer, *testsupport.TCPProxy) {
		dbURL := testsupport.NewCumulusDatabase(t, seed)
		u, _ := url.Parse(dbURL)
		proxy := testsupport.NewTCPProxy(t, u.Host)
		pool, err := pgxpool.New(context.Background(), proxy.ViaProxy(t, dbURL))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		var db recovery.DB = testsupport.CumulusDB(t, pool)
		if unbatched {
			db = oneByOne{testsupport.CumulusDB(t, pool)}
		}
		w := &recovery.Writer{DB: db, Now: func() time.Time { return now }}
		if notify {
			w.Notifier = &testsupport.RecordingNotifier{}
		}
		return dbURL, w, proxy
	}
	batchedURL, batched, batchedProxy := open(false)
	oneURL, one, oneProxy := open(true)

	inD := func(m gjson.Result) gjson.Result {
		return gjson.Parse(strings.Replace(m.Raw, `"collection":{"name":"C","version":"1"}`, `"collection":{"name":"D","version":"2"}`, 1))
	}
	withPdr := func(m gjson.Result, name string) gjson.Result {
		return gjson.Parse(strings.Replace(m.Raw, `"payload":{`, fmt.Sprintf(`"payload":{"pdr":{"name":%q},"running":[],"completed":["x"],"failed":[],`, name), 1))
	}
	noKey := `{"bucket":"b","fileName":"nokey","size":1}`
	msgs := []gjson.Result{
		message("e1", "completed", 1000, "", granule("GA", file("b", "a1", 1)+","+file("b", "a2", 2)), granule("GB", file("b", "b1", 3)), granule("GC", file("b", "c1", 4))),
		inD(message("e2", "completed", 1000, "", granule("GX", file("b", "x1", 5)))),
		// GX belongs to D; GE's files fail (a file without a key) between GX and GF.
		message("e3", "completed", 1000, "", granule("GX", file("b", "x2", 6)), granule("GE", noKey+","+file("b", "e1", 7)), granule("GF", file("b", "f1", 8))),
		// Running after completed is dropped; GG is new.
		message("e1", "running", 1000, "", granule("GA", ""), granule("GG", ""), granule("GB", "")),
		// An older completed write is dropped by the created_at guard.
		message("e4", "completed", 500, "", granule("GC", file("b", "c9", 9)), granule("GA", file("b", "a9", 9))),
		// Two granules share a file; the later one takes it.
		message("e5", "completed", 1000, "", granule("GH", file("b", "shared", 1)+","+file("b", "h1", 1)), granule("GI", file("b", "shared", 2))),
		// A granule listed twice.
		message("e6", "failed", 1000, "", granule("GJ", file("b", "j1", 1)), granule("GJ", file("b", "j2", 2)), granule("GK", file("b", "k1", 1))),
		// A PDR written, then an older one kept by its guard: the granules
		// of the second still need the PDR's id.
		withPdr(message("e7", "completed", 2000, "", granule("GL", file("b", "l1", 1)), granule("GM", file("b", "m1", 1))), "PDR1"),
		withPdr(message("e8", "completed", 1000, "", granule("GN", file("b", "n1", 1)), granule("GO", file("b", "o1", 1))), "PDR1"),
		withPdr(message("e9", "completed", 1000, "", granule("GP", file("b", "p1", 1)), granule("GQ", file("b", "q1", 1))), "PDR2"),
		// A running message of e7's with its PDR: the execution exists (v22
		// tries the insert, then updates), the PDR's guard keeps the row.
		withPdr(message("e7", "running", 2000, ""), "PDR1"),
		// An execution that fails (a NUL in its cumulus_version, which
		// PostgreSQL's text refuses): its PDR, sent with it, must not be
		// written.
		withPdr(message("e10", "completed", 3000, `,"cumulus_version":"v\u0000"`, granule("GR", "")), "PDR3"),
	}
	failedExecution := len(msgs) - 1
	ctx := context.Background()
	var r3 *recovery.Result
	var err3, errFailed error
	for i, m := range msgs {
		if !m.IsObject() {
			t.Fatalf("message %d is not JSON", i)
		}
		rb, errB := batched.Write(ctx, m)
		ro, errO := one.Write(ctx, m)
		if i == 2 {
			r3, err3 = ro, errO
		}
		if i == failedExecution {
			errFailed = errB
		}
		jb, _ := json.Marshal(rb)
		jo, _ := json.Marshal(ro)
		if string(jb) != string(jo) || fmt.Sprint(errB) != fmt.Sprint(errO) {
			t.Errorf("message %d:\n batched  %s, error %v\n one by one %s, error %v", i, jb, errB, jo, errO)
		}
	}
	// The messages reached what they are meant to test.
	var filesFailed bool
	refused := err3 != nil && strings.Contains(err3.Error(), "A granule already exists for granuleId: GX")
	for _, g := range r3.Granules {
		filesFailed = filesFailed || (g.GranuleID == "GE" && g.FilesError != "")
	}
	if !refused || !filesFailed {
		t.Fatalf("message 2 no longer refuses GX (%v) or fails GE's files (%+v)", err3, r3.Granules)
	}
	if errFailed == nil || !strings.Contains(errFailed.Error(), "0x00") {
		t.Fatalf("the execution with a NUL: error %v, want the database's refusal", errFailed)
	}

	got, want := testsupport.DumpTables(t, batchedURL, runStart), testsupport.DumpTables(t, oneURL, runStart)
	for _, table := range []string{"executions", "pdrs", "granules", "files", "granules_executions"} {
		a, b := testsupport.TableLines(t, got[table]), testsupport.TableLines(t, want[table])
		if a != b {
			t.Errorf("%s differ:\n batched\n%s\n one by one\n%s", table, a, b)
		}
	}
	if notify {
		nb, no := batched.Notifier.(*testsupport.RecordingNotifier).All, one.Notifier.(*testsupport.RecordingNotifier).All
		if fmt.Sprint(nb) != fmt.Sprint(no) {
			t.Errorf("the notifications differ:\n batched    %v\n one by one %v", nb, no)
		}
		if len(nb) < 20 {
			t.Fatalf("only %d notifications to compare", len(nb))
		}
	}
	if len(got["files"]) < 10 || len(got["pdrs"]) != 2 {
		t.Fatalf("too few rows to compare: %d files, %d PDRs", len(got["files"]), len(got["pdrs"]))
	}
	if b, o := batchedProxy.RoundTrips(), oneProxy.RoundTrips(); b >= o {
		t.Fatalf("the batched writer made %d round trips, the one-by-one writer %d: nothing was batched", b, o)
	}
}

// TestBatchedWritesDatabaseCut cuts the connection to PostgreSQL at the
// moment a pipeline of granule writes is sent (the proxy refuses the bytes
// that bind the granule statement, prepared earlier on the one
// connection): the message must fail as the database's failure
// (transient, so recover leaves the object in place), never as the
// data's; and once the database is back, writing the message again must
// leave the rows a clean one-by-one write leaves.
func TestBatchedWritesDatabaseCut(t *testing.T) {
	seed := []byte(`{"collections":[{"name":"C","version":"1"}],"providers":[{"name":"P","protocol":"s3","host":"src-bucket"}]}`)
	now := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	runStart := time.Now().Add(-time.Second)
	warm := message("e0", "completed", 1000, "", granule("W1", file("b", "w1", 1)), granule("W2", file("b", "w2", 2)))
	m := message("e1", "completed", 1000, "", granule("G1", file("b", "k1", 1)), granule("G2", file("b", "k2", 2)), granule("G3", file("b", "k3", 3)))
	ctx := context.Background()

	dbURL, proxy, pool := oneConnectionViaProxy(t, seed)
	w := &recovery.Writer{DB: testsupport.CumulusDB(t, pool), Now: func() time.Time { return now }}
	if _, err := w.Write(ctx, warm); err != nil {
		t.Fatal(err)
	}
	digest := sha256.Sum256([]byte(cumulusdb.GranuleSQLFor(testsupport.Generation(t), "completed")))
	proxy.CutBefore("stmt_" + hex.EncodeToString(digest[:24]))
	res, err := w.Write(ctx, m)
	if err == nil || !recovery.IsTransient(err) {
		t.Fatalf("cut mid-pipeline: error %v (transient %v), result %+v", err, recovery.IsTransient(err), res)
	}
	if res.Execution != recovery.Written || len(res.Granules) != 3 {
		t.Fatalf("the cut came before the pipeline: %+v", res)
	}
	proxy.Restore()
	if _, err := w.Write(ctx, m); err != nil {
		t.Fatalf("after the database came back: %v", err)
	}

	cleanURL := testsupport.NewCumulusDatabase(t, seed)
	cpool, err := pgxpool.New(ctx, cleanURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cpool.Close)
	clean := &recovery.Writer{DB: oneByOne{testsupport.CumulusDB(t, cpool)}, Now: func() time.Time { return now }}
	for _, msg := range []gjson.Result{warm, m} {
		if _, err := clean.Write(ctx, msg); err != nil {
			t.Fatal(err)
		}
	}
	got, want := testsupport.DumpTables(t, dbURL, runStart), testsupport.DumpTables(t, cleanURL, runStart)
	for _, table := range []string{"executions", "granules", "files", "granules_executions"} {
		if a, b := testsupport.TableLines(t, got[table]), testsupport.TableLines(t, want[table]); a != b {
			t.Errorf("%s after the cut and the retry:\n%s\n clean\n%s", table, a, b)
		}
	}
	if len(got["files"]) != 5 {
		t.Fatalf("%d files", len(got["files"]))
	}
}

// oneByOne is a DB that never batches (Batching is false): the writer
// sends each of its statements alone, the independent reference of the
// batched writes.
type oneByOne struct{ *cumulusdb.DB }

// Batching is false: nothing is sent in a pipeline.
func (oneByOne) Batching(recovery.DB) bool { return false }
