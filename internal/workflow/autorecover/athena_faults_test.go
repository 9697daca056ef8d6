package autorecover

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/audit"
	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/dla/gen"
	"github.com/deadletter/deadletter/internal/testsupport"
	"github.com/deadletter/deadletter/internal/testsupport/fakeathena"
)

// faultEnv is a fault test's fixture: an S3 archive whose objects carry the
// error texts textOf gives, and its Glue table.
type faultEnv struct {
	store  archive.Store
	s3     archive.Store
	loc    archive.Location
	byText map[string][]string
	keys   []string
	table  *glueTable
	bucket string
}

func faultArchive(t *testing.T, now time.Time, count int, textOf func(i int) string) *faultEnv {
	t.Helper()
	root := t.TempDir()
	local, byText := writeArchive(t, root, now, count, textOf, false)
	b := &faultEnv{byText: byText}
	c := testsupport.S3Client(t)
	b.bucket = testsupport.NewBucket(t, c)
	testsupport.UploadTree(t, c, b.bucket, root, "")
	b.keys = sqsKeys(t, root)
	b.table = glueTableOf(t, local, root, b.bucket)
	b.s3 = archive.NewS3(c, b.bucket)
	b.store = b.s3
	b.loc = archive.Location{Bucket: b.bucket, Stack: stack}
	return b
}

func (b *faultEnv) config(t *testing.T, now time.Time, e *Athena) Config {
	return Config{Store: b.store, Location: b.loc, Layout: dla.Layout{Stack: stack}, Mode: ModeRecover, Athena: e,
		Offline: true, NoAudit: true, Now: func() time.Time { return now },
		DatabaseURL: testsupport.NewCumulusDatabase(t, gen.ReferenceSeed())}
}

// sqsNow lists the sqs/ keys left in the bucket.
func (b *faultEnv) sqsNow(t *testing.T) map[string]bool {
	out := map[string]bool{}
	err := b.s3.List(context.Background(), dla.Layout{Stack: stack}.AreaPrefix(dla.AreaSQS), false, func(e archive.Entry) error {
		if !e.IsPrefix {
			out[e.Key] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func isKeys(sql string) bool {
	return strings.HasPrefix(sql, `SELECT "$path" AS path, eventdate, error`)
}

// An error text holding a NUL byte (JSON's \u0000, which Athena hands
// back as it is) in a group the pass recovers: athenasql.Keys refuses the
// text, and the whole recover stops, every other group left too, though a
// query without the IN list (the fallback Keys already has) would do.
func TestAPassWithAthenaRecoversEveryGroupWhenATextCannotBeListed(t *testing.T) {
	ctx := context.Background()
	t0 := time.Now().UTC().Truncate(time.Second)
	nulText := "KnexTimeoutError: Knex: Timeout acquiring a connection.\x00 The pool is probably full."
	b := faultArchive(t, t0, 40, func(i int) string {
		if i%5 == 4 {
			return nulText
		}
		return knexText
	})
	if dla.ErrorClass(nulText) == dla.ErrorClass(knexText) {
		t.Logf("same class")
	}
	fake := fakeathena.New(t, b.table.plan(t))
	r, err := Pass(ctx, b.config(t, t0, engineAt(fake.URL)))
	t.Logf("err: %v", err)
	if err != nil {
		written := 0
		if r != nil {
			for _, g := range r.Groups {
				if g.Recovered != nil {
					written += g.Recovered.Written + g.Recovered.Dropped
				}
			}
		}
		t.Fatalf("a NUL in one group's error text stopped the recover of every group (%d objects written of %d): %v",
			written, len(b.byText[knexText])+len(b.byText[nulText]), err)
	}
	if k := groupOf(t, r, knexText).Recovered; k == nil || k.Written+k.Dropped != len(b.byText[knexText]) {
		t.Errorf("knex group: %+v", k)
	}
}

// A group smaller than MaxObjects never has MaxObjects keys: the query of
// keys still stops once the keys found give recover all it will take
// (here the first group's fill the budget, on the first page).
func TestAPassWithAthenaStopsReadingKeysOnceASmallGroupAndTheBudgetAreMet(t *testing.T) {
	ctx := context.Background()
	t0 := time.Now().UTC().Truncate(time.Second)
	const econn = "Error: connect ECONNREFUSED 10.0.0.1:5432"
	b := faultArchive(t, t0, 70, func(i int) string {
		if i == 0 || i == 1 {
			return econn
		}
		return knexText
	})
	fake := fakeathena.New(t, b.table.plan(t))
	fake.PageSize = 7
	const budget = 5
	c := b.config(t, t0, engineAt(fake.URL))
	c.MaxObjects = budget
	before := 0
	c.Stage = func(s string) {
		if s == "recover" {
			before = fake.Calls("GetQueryResults")
		}
	}
	r, err := Pass(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range r.Groups {
		t.Logf("group %s count %d probe %+v recovered %+v", *g.ErrorClass, g.Count, g.Probe, g.Recovered)
	}
	if r.Totals.Selected != budget {
		t.Errorf("selected %d, want %d", r.Totals.Selected, budget)
	}
	all := (len(b.keys) + 1 + 6) / 7
	if pages := fake.Calls("GetQueryResults") - before; pages != 1 {
		t.Errorf("%d pages of keys read (of %d), want 1: the first group's %d keys fill the budget, whatever the group of %d objects has",
			pages, all, budget, len(b.byText[econn]))
	}
}

// The triage query FAILED: the pass ends with an error and a report,
// nothing moved, the failed query in the report, no record begun.
func TestAPassWhoseAthenaTriageFailedMovesNothing(t *testing.T) {
	ctx := context.Background()
	t0 := time.Now().UTC().Truncate(time.Second)
	b := faultArchive(t, t0, 20, func(i int) string { return knexText })
	fake := fakeathena.New(t, func(sql string) fakeathena.Execution {
		return fakeathena.Execution{States: []string{"RUNNING", "FAILED"}, Reason: "HIVE_BAD_DATA: boom"}
	})
	c := b.config(t, t0, engineAt(fake.URL))
	c.NoAudit = false
	before := b.sqsNow(t)
	r, err := Pass(ctx, c)
	if err == nil || r == nil {
		t.Fatalf("err %v, report %v", err, r)
	}
	t.Logf("err: %v; notification: %+v; queries %+v", err, r.Notification, r.Queries)
	if len(r.Queries) != 1 || r.Queries[0].Purpose != "triage" {
		t.Errorf("queries %+v", r.Queries)
	}
	if len(b.sqsNow(t)) != len(before) {
		t.Errorf("objects moved")
	}
	if r.Objects != 0 || len(r.Groups) != 0 {
		t.Errorf("objects %d groups %d", r.Objects, len(r.Groups))
	}
}

// failingProxy forwards to the fake Athena and fails the nth call of
// action (1-based) with a non-retryable error.
type failingProxy struct {
	mu     sync.Mutex
	target string
	action string
	nth    int
	seen   int
}

func (f *failingProxy) serve(w http.ResponseWriter, r *http.Request) {
	action := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "AmazonAthena.")
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	fail := false
	if action == f.action {
		f.seen++
		fail = f.seen == f.nth
	}
	f.mu.Unlock()
	if fail {
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		w.Header().Set("X-Amzn-ErrorType", "InvalidRequestException")
		w.WriteHeader(400)
		fmt.Fprint(w, `{"__type":"InvalidRequestException","Message":"injected failure"}`)
		return
	}
	req, _ := http.NewRequest(r.Method, f.target+r.URL.Path, bytes.NewReader(body))
	req.Header = r.Header.Clone()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		w.WriteHeader(502)
		return
	}
	defer resp.Body.Close()
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	io.Copy(w, resp.Body)
}

// The triage query's results fail on their second page: the report
// must not say it counted the rows of the first.
func TestAPassWhoseAthenaTriageResultsFailMidwayCountsNothing(t *testing.T) {
	ctx := context.Background()
	t0 := time.Now().UTC().Truncate(time.Second)
	b := faultArchive(t, t0, 60, func(i int) string { return []string{knexText, missingText, permanentText}[i%3] })
	// distinct collections make the triage many rows
	for i := range b.table.rows {
		b.table.rows[i].collection = fmt.Sprintf("C%03d___1", i)
	}
	fake := fakeathena.New(t, b.table.plan(t))
	fake.PageSize = 7
	px := &failingProxy{target: fake.URL, action: "GetQueryResults", nth: 2}
	srv := httptest.NewServer(http.HandlerFunc(px.serve))
	defer srv.Close()
	c := b.config(t, t0, engineAt(srv.URL))
	r, err := Pass(ctx, c)
	if err == nil || r == nil {
		t.Fatalf("err %v report %v", err, r)
	}
	t.Logf("err: %v; objects %d groups %d queries %+v", err, r.Objects, len(r.Groups), r.Queries)
	if r.Objects != 0 {
		t.Errorf("the failed pass's report says %d objects in %d groups: the rows of the pages read before the failure", r.Objects, len(r.Groups))
	}
	text := build(r, 10, 10)
	t.Logf("notification text:\n%s", text.Text)
}

// The keys query fails (FAILED, or its results midway) in recover mode:
// the pass ends with an error, its audit record finished with exit code 1,
// nothing moved, and both queries in the report.
func TestAPassWhoseQueryOfKeysFailsMovesNothingAndSaysSo(t *testing.T) {
	for _, how := range []string{"FAILED", "results"} {
		t.Run(how, func(t *testing.T) {
			ctx := context.Background()
			t0 := time.Now().UTC().Truncate(time.Second)
			b := faultArchive(t, t0, 40, func(i int) string { return []string{knexText, knexText, missingText}[i%3] })
			plan := b.table.plan(t)
			fake := fakeathena.New(t, func(sql string) fakeathena.Execution {
				ex := plan(sql)
				if how == "FAILED" && isKeys(sql) {
					ex.States = []string{"QUEUED", "FAILED"}
					ex.Reason = "TOO_MANY_REQUESTS"
				}
				return ex
			})
			fake.PageSize = 7
			url := fake.URL
			var px *failingProxy
			if how == "results" { // the keys query's 2nd page of results fails
				px = &failingProxy{target: fake.URL, action: "GetQueryResults", nth: -1}
				srv := httptest.NewServer(http.HandlerFunc(px.serve))
				defer srv.Close()
				url = srv.URL
			}
			c := b.config(t, t0, engineAt(url))
			c.NoAudit = false
			c.Stage = func(s string) {
				if s == "recover" && px != nil {
					px.mu.Lock()
					px.nth = px.seen + 2
					px.mu.Unlock()
				}
			}
			runKeysFail(t, ctx, b, c, fake)
		})
	}
}

func runKeysFail(t *testing.T, ctx context.Context, b *faultEnv, c Config, fake *fakeathena.Server) {
	before := b.sqsNow(t)
	r, err := Pass(ctx, c)
	if err == nil || r == nil {
		t.Fatalf("err %v report %v", err, r)
	}
	t.Logf("err: %v; queries %+v; stopped %q; notification %+v", err, r.Queries, r.Stopped, r.Notification)
	if len(r.Queries) != 2 || r.Queries[1].Purpose != "keys" {
		t.Errorf("queries %+v", r.Queries)
	}
	if n := len(b.sqsNow(t)); n != len(before) {
		t.Errorf("%d objects left of %d", n, len(before))
	}
	runs, _, lerr := audit.List(ctx, b.s3, c.Layout.AuditPrefix(), audit.Filter{Tool: "dla", Verbs: []string{Verb}})
	if lerr != nil || len(runs) != 1 || runs[0].Finished == nil || runs[0].Finished.ExitCode != 1 || runs[0].Finished.Error == "" {
		t.Errorf("audit runs %+v (%v)", runs, lerr)
	} else {
		t.Logf("record finished: exit %d, %q", runs[0].Finished.ExitCode, runs[0].Finished.Error)
	}
	for _, g := range r.Groups {
		if g.Recovered != nil && g.Recovered.Written+g.Recovered.Dropped > 0 {
			t.Errorf("group %s recovered %+v", *g.ErrorClass, g.Recovered)
		}
	}
}

// Over 100 kB of error texts in the recovered group: Keys selects every
// object of the dates; only the wanted group's objects are recovered, and
// no other object is read.
func TestAQueryOfKeysPastTheTextLimitRecoversOnlyTheWantedGroups(t *testing.T) {
	ctx := context.Background()
	t0 := time.Now().UTC().Truncate(time.Second)
	long := func(i int) string { return knexText + " " + strings.Repeat("x", 3000) + fmt.Sprintf(" #%d", i) }
	b := faultArchive(t, t0, 80, func(i int) string {
		if i%4 == 3 {
			return permanentText
		}
		return long(i)
	})
	fake := fakeathena.New(t, b.table.plan(t))
	counting := &countingStore{Store: b.s3, reads: map[string]int{}}
	b.store = counting
	c := b.config(t, t0, engineAt(fake.URL))
	r, err := Pass(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	var keysSQL string
	for _, s := range fake.Started() {
		if isKeys(s.SQL) {
			keysSQL = s.SQL
		}
	}
	if strings.Contains(keysSQL, "error IN (") {
		t.Fatalf("no fallback: %d bytes", len(keysSQL))
	}
	classes := map[string]bool{}
	for text := range b.byText {
		classes[dla.ErrorClass(text)] = true
	}
	t.Logf("%d classes; groups %d", len(classes), len(r.Groups))
	for _, key := range b.byText[permanentText] {
		if counting.reads[key] != 0 {
			t.Errorf("%s (permanent) read", key)
		}
	}
	written := r.Totals.Written + r.Totals.Dropped
	if written != len(b.keys)-len(b.byText[permanentText]) {
		t.Errorf("written %d, want %d; totals %+v", written, len(b.keys)-len(b.byText[permanentText]), r.Totals)
	}
}

// Quotes, newlines and several texts of one class: the IN list holds
// each, and every object of the class is recovered.
func TestAQueryOfKeysListsQuotesNewlinesAndEveryTextOfAClass(t *testing.T) {
	ctx := context.Background()
	t0 := time.Now().UTC().Truncate(time.Second)
	texts := []string{
		knexText,
		knexText + "\nat Pool.acquire ('it''s' \"q\")",
		"KnexTimeoutError: Knex: Timeout acquiring a connection. 'quoted' \\ back",
		permanentText,
	}
	b := faultArchive(t, t0, 40, func(i int) string { return texts[i%len(texts)] })
	for _, tx := range texts {
		t.Logf("%q -> %q", tx, dla.ErrorClass(tx))
	}
	fake := fakeathena.New(t, b.table.plan(t))
	r, err := Pass(ctx, b.config(t, t0, engineAt(fake.URL)))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{}
	for _, tx := range texts[:3] {
		want[dla.ErrorClass(tx)] += len(b.byText[tx])
	}
	for _, g := range r.Groups {
		if n, ok := want[*g.ErrorClass]; ok {
			if g.Recovered == nil || g.Recovered.Written+g.Recovered.Dropped != n {
				t.Errorf("group %q: %+v, want %d", *g.ErrorClass, g.Recovered, n)
			}
		}
	}
	left := b.sqsNow(t)
	if len(left) != len(b.byText[permanentText]) {
		t.Errorf("%d left, want %d", len(left), len(b.byText[permanentText]))
	}
}
