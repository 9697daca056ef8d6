package dlacmd

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/deadletter/deadletter/internal/testsupport"
)

// faultArchive uploads the seed3 archive to a fresh bucket and returns the
// environment, the bucket and an S3 proxy in front of the server.
func faultArchive(t *testing.T) (*recoverEnv, string, *testsupport.Proxy) {
	e := newRecoverEnv(t, testsupport.Seed3Seed(t), nil)
	bucket := testsupport.NewBucket(t, e.s3)
	testsupport.UploadTree(t, e.s3, bucket, seed3+"/archive/demo", "demo/")
	proxy := proxyS3(t)
	return e, bucket, proxy
}

func results(t *testing.T, stdout string) []map[string]any {
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		if line == "" {
			continue
		}
		var o map[string]any
		if err := json.Unmarshal([]byte(line), &o); err != nil {
			t.Fatalf("bad ndjson %q", line)
		}
		out = append(out, o)
	}
	return out
}

// objectsByKey is the object lines of a recover's ndjson, by key.
func objectsByKey(t *testing.T, stdout string) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, o := range results(t, stdout) {
		if o["type"] == "object" {
			out[o["key"].(string)] = o
		}
	}
	return out
}

// TestRecoverCopyFailureKeepsOriginal: when the copy to failed-sqs fails,
// the failed object stays where it was; written objects are still deleted.
func TestRecoverCopyFailureKeepsOriginal(t *testing.T) {
	e, bucket, proxy := faultArchive(t)
	proxy.SetHook(func(op string, body []byte) ([]byte, *testsupport.Reply) {
		if op == "PutObject" { // the copy to failed-sqs
			return nil, &testsupport.Reply{Status: 400, Body: "<Error><Code>InvalidRequest</Code><Message>injected</Message></Error>"}
		}
		return nil, nil
	})
	// --no-audit: every PutObject fails, the audit record's too.
	r := runAt(t, time.Now, e.env, "", "recover", "--archive", "s3://"+bucket+"/demo", "--database-url", e.dbURL,
		"--yes", "--offline", "--concurrency", "4", "-o", "ndjson", "--no-audit")
	if r.code != 3 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	left := testsupport.KeySet(t, e.s3, bucket, "demo/dead-letter-archive/")
	failed := 0
	for _, o := range results(t, r.stdout) {
		if o["type"] != "object" {
			continue
		}
		key := o["key"].(string)
		switch o["result"] {
		case "written", "dropped":
			if left[key] {
				t.Errorf("%s written but not deleted", key)
			}
		default:
			failed++
			if !left[key] || o["action"] != "left" {
				t.Errorf("%s: %v after a failed copy, present=%v", key, o["action"], left[key])
			}
		}
	}
	if len(left) != failed || failed == 0 {
		t.Fatalf("%d objects left, %d failed", len(left), failed)
	}
}

// TestRecoverDatabaseLostMidRun cuts every database connection part way
// through: nothing that was not written is deleted, the run stops with the
// rest left in place, and a re-run completes.
func TestRecoverDatabaseLostMidRun(t *testing.T) {
	e, bucket, proxy := faultArchive(t)
	u, _ := url.Parse(e.dbURL)
	pg := testsupport.NewTCPProxy(t, u.Host)
	dbURL := pg.ViaProxy(t, e.dbURL)
	var deletes atomic.Int32
	proxy.SetHook(func(op string, body []byte) ([]byte, *testsupport.Reply) {
		// After the 10th move of a failed object, the database goes away.
		if op == "DeleteObject" && deletes.Add(1) == 10 {
			pg.Cut()
		}
		return nil, nil
	})
	r := runAt(t, time.Now, e.env, "", "recover", "--archive", "s3://"+bucket+"/demo", "--database-url", dbURL,
		"--yes", "--offline", "--concurrency", "2", "-o", "ndjson")
	if r.code != 3 || !strings.Contains(r.stderr, "stopped") {
		t.Fatalf("exit %d, want 3 and a stop: %s", r.code, r.stderr)
	}
	conn, err := pgx.Connect(context.Background(), e.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	present := testsupport.KeySet(t, e.s3, bucket, "demo/dead-letter-archive/sqs/")
	var summary map[string]any
	processed := 0
	for _, o := range results(t, r.stdout) {
		if o["type"] == "summary" {
			summary = o
			continue
		}
		key := o["key"].(string)
		switch o["result"] {
		case "written", "dropped":
			processed++
			if present[key] {
				t.Errorf("%s written but still in sqs/", key)
			}
			var n int
			if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM executions WHERE arn = $1`, o["execution_arn"]).Scan(&n); err != nil || n != 1 {
				t.Errorf("%s deleted, but its execution %v is not in the database", key, o["execution_arn"])
			}
		case "left":
			if !present[key] {
				t.Errorf("%s left by the outage, but not in sqs/", key)
			}
		default:
			processed++
		}
	}
	if summary == nil || summary["not_processed"].(float64)+summary["left"].(float64) == 0 {
		t.Fatalf("the outage stopped nothing: %v", summary)
	}
	if len(present) == 0 || processed == 0 {
		t.Fatalf("present %d, processed %d", len(present), processed)
	}
	// The counts add up, and the stop message names exactly what remains in
	// sqs/ (it used to count the objects left in place twice).
	sel, proc := int(summary["selected"].(float64)), int(summary["processed"].(float64))
	left, notProc := int(summary["left"].(float64)), int(summary["not_processed"].(float64))
	if proc+left+notProc != sel {
		t.Errorf("processed %d + left %d + not processed %d != selected %d", proc, left, notProc, sel)
	}
	if want := fmt.Sprintf("%d objects not processed, left in place", len(present)); !strings.Contains(r.stderr, want) {
		t.Errorf("the stop message does not say %q (%d objects are in sqs/): %s", want, len(present), r.stderr)
	}

	// The database is back: the re-run picks up the rest.
	pg.Restore()
	proxy.SetHook(nil)
	r = runAt(t, time.Now, e.env, "", "recover", "--archive", "s3://"+bucket+"/demo", "--database-url", dbURL,
		"--yes", "--offline", "--concurrency", "2", "-o", "ndjson")
	if r.code != 3 || strings.Contains(r.stderr, "stopped") {
		t.Fatalf("re-run: exit %d: %s", r.code, r.stderr)
	}
	if left := testsupport.ListKeys(t, e.s3, bucket, "demo/dead-letter-archive/sqs/"); len(left) != 0 {
		t.Fatalf("after the re-run %d objects remain in sqs/", len(left))
	}
}
