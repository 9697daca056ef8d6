package sfevent

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sort"
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

// cutDB cuts the database (the TCP proxy) right after the nth call of one
// write committed: the rest of that message's writes, and everything else
// in flight, hit a dead connection.
type cutDB struct {
	*cumulusdb.DB
	method string
	n      int
	proxy  *testsupport.TCPProxy

	mu    sync.Mutex
	calls int
	cut   bool
}

func (c *cutDB) after(method string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if method != c.method {
		return
	}
	if c.calls++; c.calls == c.n {
		c.proxy.Cut()
		c.cut = true
	}
}

func (c *cutDB) UpsertExecution(ctx context.Context, r *recovery.ExecutionRow) (int64, error) {
	id, err := c.DB.UpsertExecution(ctx, r)
	c.after("UpsertExecution")
	return id, err
}

func (c *cutDB) UpsertPdr(ctx context.Context, r *recovery.PdrRow) (bool, error) {
	ok, err := c.DB.UpsertPdr(ctx, r)
	c.after("UpsertPdr")
	return ok, err
}

func (c *cutDB) WriteGranule(ctx context.Context, g *recovery.GranuleWrite) (recovery.GranuleResult, error) {
	r, err := c.DB.WriteGranule(ctx, g)
	c.after("WriteGranule")
	return r, err
}

func (c *cutDB) WriteFiles(ctx context.Context, id, collection int64, files []recovery.FileRow) error {
	err := c.DB.WriteFiles(ctx, id, collection, files)
	c.after("WriteFiles")
	return err
}

// GranuleScope keeps the granule's writes on this DB (on a pool it is fn(d)).
func (c *cutDB) GranuleScope(ctx context.Context, fn func(recovery.DB) error) error { return fn(c) }

// TestDatabaseCutBetweenTwoWritesOfAMessage feeds the seed-3 messages to
// the db writer and cuts PostgreSQL right after one write of a message
// committed (the execution written, its PDR or granules not; the granule
// written, its files not), then lets SQS deliver the retried records once
// the database is back. The tables must end exactly as a run without the
// fault leaves them, and the same records dead-lettered with the same
// errors: a half-written message is completed by its retry, never left
// half-written or dead-lettered for the cut.
func TestDatabaseCutBetweenTwoWritesOfAMessage(t *testing.T) {
	s3c := testsupport.S3Client(t)
	testsupport.UploadSeed3(t, s3c)
	sfn := testsupport.NewSFNFake(t, testsupport.LoadSFN(t, filepath.Join(testsupport.Seed3Dir(t), "archive", "_fixtures", "sfn.json")))
	seed := testsupport.Seed3Seed(t)
	runStart := time.Now().Add(-time.Second)
	_, records := seed3Records(t)

	cleanDB := testsupport.NewCumulusDatabase(t, seed)
	clean := &sqsRecorder{}
	feedAll(t, testHandler(t, cleanDB, sfn, clean), records, nil)
	want := testsupport.DumpTables(t, cleanDB, runStart)

	for _, tc := range []struct {
		method string
		n      int
	}{{"UpsertExecution", 12}, {"UpsertPdr", 3}, {"WriteGranule", 20}, {"WriteFiles", 15}} {
		t.Run(tc.method, func(t *testing.T) {
			dbURL := testsupport.NewCumulusDatabase(t, seed)
			proxy := testsupport.NewTCPProxy(t, strings.Split(strings.SplitN(dbURL, "@", 2)[1], "/")[0])
			dlq := &sqsRecorder{}
			h := testHandler(t, proxy.ViaProxy(t, dbURL), sfn, dlq)
			pool, err := pgxpool.New(context.Background(), proxy.ViaProxy(t, dbURL))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(pool.Close)
			db := &cutDB{DB: testsupport.CumulusDB(t, pool), method: tc.method, n: tc.n, proxy: proxy}
			h.Writer.DB = db
			retried := feedAll(t, h, records, proxy)
			if !db.cut {
				t.Fatal("the database was never cut")
			}
			if retried == 0 {
				t.Errorf("no record retried: the cut was not seen as the database's failure")
			}
			got := testsupport.DumpTables(t, dbURL, runStart)
			for _, table := range []string{"executions", "pdrs", "granules", "files", "granules_executions"} {
				a, b := canonicalRows(got[table]), canonicalRows(want[table])
				if strings.Join(a, "\n") != strings.Join(b, "\n") {
					t.Errorf("%s: %d rows after the cut, %d without it, and they differ:\n%s", table, len(a), len(b), firstDiff(a, b))
				}
			}
			if a, b := letters(dlq), letters(clean); strings.Join(a, "\n") != strings.Join(b, "\n") {
				t.Errorf("dead letters: %d after the cut, %d without it:\n%s", len(a), len(b), firstDiff(a, b))
			}
			t.Logf("cut after %s #%d: %d records retried, tables and dead letters as without the fault", tc.method, tc.n, retried)
		})
	}
}

// feedAll hands the records over in batches of 10, then delivers the
// batch item failures again (the database restored first) until none
// remain; it returns how many deliveries were retries.
func feedAll(t *testing.T, h *Handler, records []json.RawMessage, proxy *testsupport.TCPProxy) (retried int) {
	t.Helper()
	byID := map[string]json.RawMessage{}
	var pending []json.RawMessage
	for i := 0; i < len(records); i += 10 {
		pending = append(pending, deliver(t, h, records[i:min(i+10, len(records))], byID)...)
	}
	for round := 0; len(pending) > 0; round++ {
		if round == 5 {
			t.Fatalf("%d records still failing after 5 redeliveries", len(pending))
		}
		if proxy != nil {
			proxy.Restore()
		}
		retried += len(pending)
		var next []json.RawMessage
		for i := 0; i < len(pending); i += 10 {
			next = append(next, deliver(t, h, pending[i:min(i+10, len(pending))], byID)...)
		}
		pending = next
	}
	return retried
}

func deliver(t *testing.T, h *Handler, batch []json.RawMessage, byID map[string]json.RawMessage) []json.RawMessage {
	t.Helper()
	for _, r := range batch {
		byID[gjson.GetBytes(r, "messageId").Str] = r
	}
	event, _ := json.Marshal(map[string]any{"Records": batch})
	var out []json.RawMessage
	for _, id := range failedIDs(t, h, event) {
		out = append(out, byID[id])
	}
	return out
}

func letters(r *sqsRecorder) []string {
	var out []string
	for _, b := range r.bodies {
		out = append(out, gjson.Get(b, "messageId").Str+" "+gjson.Get(b, "error").Str)
	}
	sort.Strings(out)
	return out
}
