package dlacmd

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/jackc/pgx/v5"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/cumulusdb"
	"github.com/deadletter/deadletter/internal/dla/gen"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// The tests in this file are issue 10's hostile-archive cases:
// hostile keys, strangers beside the archive, name collisions, lost
// replies, filters and unreadable objects, concurrent runs. Each runs the
// CLI against a local archive and, where objects move, against S3 too.

const hostileRoot = "demo/dead-letter-archive/"

// hostileArchive is an archive, local or in S3, that a test fills with raw
// objects (any key, inside the archive or beside it) and inspects after.
type hostileArchive struct {
	spec string // --archive
	put  func(key string, body []byte)
	get  func(key string) ([]byte, bool)
	keys func() []string // every key in the bucket or directory
}

func localHostile(t *testing.T) *hostileArchive {
	dir := t.TempDir()
	h := &hostileArchive{spec: filepath.Join(dir, "demo")}
	h.put = func(key string, body []byte) {
		p := filepath.Join(dir, filepath.FromSlash(key))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h.get = func(key string) ([]byte, bool) {
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(key)))
		return b, err == nil
	}
	h.keys = func() []string {
		var keys []string
		_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				rel, _ := filepath.Rel(dir, p)
				keys = append(keys, filepath.ToSlash(rel))
			}
			return nil
		})
		slices.Sort(keys)
		return keys
	}
	if err := os.MkdirAll(filepath.Join(dir, "demo/dead-letter-archive/sqs"), 0o755); err != nil {
		t.Fatal(err)
	}
	return h
}

func s3Hostile(t *testing.T, c *s3.Client) *hostileArchive {
	bucket := testsupport.NewBucket(t, c)
	ctx := context.Background()
	h := &hostileArchive{spec: "s3://" + bucket + "/demo"}
	h.put = func(key string, body []byte) {
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body)}); err != nil {
			t.Fatalf("put %q: %v", key, err)
		}
	}
	h.get = func(key string) ([]byte, bool) {
		out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
		if err != nil {
			return nil, false
		}
		defer out.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(out.Body)
		return b.Bytes(), true
	}
	h.keys = func() []string { k := testsupport.ListKeys(t, c, bucket, ""); slices.Sort(k); return k }
	return h
}

// hostileS3 is a recover environment (a database, the CLI pointed at the
// test S3) and a hostile archive in a new bucket there.
func hostileS3(t *testing.T) (*recoverEnv, *hostileArchive) {
	t.Helper()
	e := newRecoverEnv(t, gen.ReferenceSeed(), nil)
	return e, s3Hostile(t, e.s3)
}

// proxyS3 puts a proxy in front of the test S3 server and sends the CLI's
// S3 requests through it.
func proxyS3(t *testing.T) *testsupport.Proxy {
	t.Helper()
	proxy := testsupport.NewProxy(t, testsupport.S3Endpoint(t))
	t.Setenv("AWS_ENDPOINT_URL_S3", proxy.URL)
	return proxy
}

// both runs fn on a local archive and on one in S3.
func both(t *testing.T, fn func(t *testing.T, h *hostileArchive)) {
	t.Run("local", func(t *testing.T) { fn(t, localHostile(t)) })
	t.Run("s3", func(t *testing.T) {
		_, h := hostileS3(t)
		fn(t, h)
	})
}

// generateInto writes gen's objects into the local folder dir (the folder
// that holds the stack folder), and returns the store of that folder.
func generateInto(t *testing.T, dir string, opts gen.Options) archive.Store {
	t.Helper()
	store, err := archive.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := gen.Generate(opts, func(o gen.Object) error { return store.Put(context.Background(), o.Key, o.Body) }); err != nil {
		t.Fatal(err)
	}
	return store
}

func hostileDB(t *testing.T) string { return testsupport.NewCumulusDatabase(t, gen.ReferenceSeed()) }

// lockArchive is a local archive of count generated objects (enough for a
// recover at concurrency 1 to last while a test works on its lock) and a
// database for it.
func lockArchive(t *testing.T, count int) (*hostileArchive, string) {
	t.Helper()
	h := localHostile(t)
	generateInto(t, filepath.Dir(h.spec), gen.Options{Stack: "demo", Count: count, Seed: 3, MinGranules: 1, MaxGranules: 3, Malformed: -1})
	return h, hostileDB(t)
}

// lockedRun is a recover (run A) that holds its archive's lock.
type lockedRun struct {
	conn      *pgx.Conn      // the test's own connection to the database
	done      chan runResult // run A's result
	pid, port int32          // the lock's backend, and its client port
	stop      context.CancelFunc
}

// interrupt stops run A as Ctrl-C does, once the test has seen what it
// needed (run B refused): the rest of A's archive, thousands of objects
// at concurrency 1, would only spend the suite's time. It returns A's
// result.
func (a *lockedRun) interrupt() runResult {
	a.stop()
	return <-a.done
}

// startLockedRun starts run A on the archive spec into db at concurrency 1
// (through runURL, when it is not "") and waits until it holds its lock.
func startLockedRun(t *testing.T, spec, db, runURL string) *lockedRun {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(ctx) })
	runCtx, stop := context.WithCancel(ctx)
	t.Cleanup(stop)
	a := &lockedRun{conn: conn, done: make(chan runResult, 1), stop: stop}
	go func() {
		a.done <- runContext(t, runCtx, false, time.Now, noPrompt, "", "recover", "--archive", spec, "--database-url", cmp.Or(runURL, db), "--offline", "--yes", "--concurrency", "1")
	}()
	for i := 0; i < 300 && a.pid == 0; i++ {
		_ = conn.QueryRow(ctx, `SELECT l.pid, coalesce(a.client_port, 0) FROM pg_locks l JOIN pg_stat_activity a USING (pid)
			WHERE l.locktype = 'advisory' AND l.granted AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&a.pid, &a.port)
		if a.pid == 0 {
			time.Sleep(50 * time.Millisecond)
		}
	}
	if a.pid == 0 {
		t.Fatal("run A never took its lock")
	}
	return a
}

// recoverAlongside is run B: a short recover of the archive spec into db,
// which run A's lock must refuse.
func recoverAlongside(t *testing.T, spec, db string) runResult {
	t.Helper()
	return runAt(t, time.Now, noPrompt, "", "recover", "--archive", spec, "--database-url", db, "--offline", "--yes", "--limit", "5")
}

var noPrompt = map[string]string{"DEADLETTER_NO_PROMPT": "1"}

// TestRecoverNewlineKeyTouchesNothingElse: a key holding a newline is one
// key from listing to move. Recover used to spool keys one per line, split
// this one in two, and move the stranger backups/db-dump.sql (beside the
// archive) into failed-sqs/, deleting it from its own key.
func TestRecoverNewlineKeyTouchesNothingElse(t *testing.T) {
	both(t, func(t *testing.T, h *hostileArchive) {
		hostile := hostileRoot + "sqs/2024-03-01/x\nbackups/db-dump.sql"
		stranger := "backups/db-dump.sql"
		sibling := hostileRoot + "sqs/2024-03-01/x"
		h.put(hostile, []byte("not json"))
		h.put(stranger, []byte("-- the production dump"))
		h.put(sibling+"-other", []byte("{"))
		before := h.keys()
		r := runAt(t, time.Now, noPrompt, "", "recover", "--archive", h.spec, "--database-url", hostileDB(t),
			"--date", "2024-03-01", "--offline", "--yes", "-o", "ndjson")
		if r.code != 3 {
			t.Fatalf("exit %d, want 3 (two unreadable objects moved): %s", r.code, r.stderr)
		}
		if b, ok := h.get(stranger); !ok || string(b) != "-- the production dump" {
			t.Fatalf("the stranger %s was touched (present %v): %q\nbefore %q\nafter %q", stranger, ok, b, before, h.keys())
		}
		moved := map[string]string{}
		for _, o := range results(t, r.stdout) {
			if o["type"] == "object" {
				moved[o["key"].(string)], _ = o["moved_to"].(string)
			}
		}
		if len(moved) != 2 || moved[hostile] == "" || moved[sibling+"-other"] == "" {
			t.Fatalf("objects handled: %q; want exactly the two in the archive, moved", moved)
		}
		if b, ok := h.get(moved[hostile]); !ok || string(b) != "not json" {
			t.Errorf("the newline key's copy at %q: %q, %v", moved[hostile], b, ok)
		}
		if _, ok := h.get(hostile); ok {
			t.Errorf("the newline key is still in sqs/ after its move")
		}
	})
}

// TestKeysPipeWithNUL: -o keys will not print a key that would not read back
// as itself one per line; -o keys -0 prints it, and show/recover -0 read it.
func TestKeysPipeWithNUL(t *testing.T) {
	h := localHostile(t)
	hostile := hostileRoot + "sqs/2024-03-02/x\nbackups/db-dump.sql"
	trailing := hostileRoot + "sqs/2024-03-02/y "
	valid, err := os.ReadFile(sampleArchive + "/dead-letter-archive/sqs/2024-03-02/49373414-fb81-4e23-8da5-91186042e9bf-cacb018c-3384-4861-9511-6bd766e32aef")
	if err != nil {
		t.Fatal(err)
	}
	h.put(hostile, valid)
	h.put(trailing, valid)
	h.put(hostileRoot+"sqs/2024-03-02/y", []byte("a different object"))

	r := run(t, false, nil, "", "search", "--archive", h.spec, "--date", "2024-03-02", "-o", "keys")
	if r.code != 3 || r.stdout != "" || !strings.Contains(r.stderr, "-o keys -0") {
		t.Fatalf("line keys: exit %d, stdout %q, stderr %s; want nothing printed, exit 3, and a pointer to -0", r.code, r.stdout, r.stderr)
	}
	r = run(t, false, nil, "", "search", "--archive", h.spec, "--date", "2024-03-02", "-o", "keys", "-0")
	if r.code != 3 || r.stdout != hostile+"\x00"+trailing+"\x00" { // y is unreadable: exit 3
		t.Fatalf("-o keys -0: exit %d, stdout %q, stderr %s", r.code, r.stdout, r.stderr)
	}
	// show -0 reads NUL-separated keys exactly, spaces and newlines kept.
	r = run(t, false, nil, r.stdout, "show", "--archive", h.spec, "-0", "-o", "json", "-")
	var docs []map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &docs); err != nil {
		t.Fatalf("show -0: %v: %q (stderr %s)", err, r.stdout, r.stderr)
	}
	if len(docs) != 2 || docs[0]["key"] != hostile || docs[1]["key"] != trailing {
		t.Fatalf("show -0 read %d objects: %v", len(docs), docs)
	}
	// recover -0 - writes and deletes exactly the named objects; y stays.
	r = run(t, false, noPrompt, hostile+"\x00"+trailing+"\x00", "recover", "--archive", h.spec, "--database-url", hostileDB(t),
		"--offline", "--yes", "-0", "-o", "ndjson", "-")
	if r.code != 0 || !strings.Contains(r.stderr, "2 written") {
		t.Fatalf("recover -0: exit %d: %s", r.code, r.stderr)
	}
	if b, ok := h.get(hostileRoot + "sqs/2024-03-02/y"); !ok || string(b) != "a different object" {
		t.Errorf("recover -0 touched the object y (not named): %q %v", b, ok)
	}
	for _, k := range []string{hostile, trailing} {
		if _, ok := h.get(k); ok {
			t.Errorf("%q named with -0, written, but not deleted", k)
		}
	}
}

// TestContainmentRefusesStrangers: nothing outside <stack>/dead-letter-archive/
// is read, copied, moved or deleted: not an explicit key, not a key with
// "..", not the target of a link.
func TestContainmentRefusesStrangers(t *testing.T) {
	t.Run("explicit key beside the archive", func(t *testing.T) {
		h := localHostile(t)
		h.put("notes.txt", []byte("my notes"))
		h.put("demo/notes.txt", []byte("stack notes"))
		db := hostileDB(t)
		for _, key := range []string{"notes.txt", "demo/notes.txt"} {
			r := run(t, false, noPrompt, "", "recover", "--archive", h.spec, "--database-url", db, "--offline", "--yes", "-o", "ndjson", key)
			if r.code == 0 || !strings.Contains(r.stderr+r.stdout, "outside demo/dead-letter-archive/") {
				t.Errorf("recover %s: exit %d, want a refusal naming the archive: %s %s", key, r.code, r.stdout, r.stderr)
			}
			r = run(t, false, nil, "", "show", "--archive", h.spec, key)
			if r.code == 0 || strings.Contains(r.stdout, "notes") {
				t.Errorf("show %s: exit %d, printed %q", key, r.code, r.stdout)
			}
		}
		if b, ok := h.get("notes.txt"); !ok || string(b) != "my notes" {
			t.Errorf("notes.txt touched: %q %v", b, ok)
		}
		if b, ok := h.get("demo/notes.txt"); !ok || string(b) != "stack notes" {
			t.Errorf("demo/notes.txt touched: %q %v", b, ok)
		}
	})
	t.Run("dot-dot key in S3", func(t *testing.T) {
		_, h := hostileS3(t)
		h.put("other/config.txt", []byte("secret=1"))
		h.put(hostileRoot+"sqs/2024-03-01/real", []byte("{"))
		key := "sqs/../../../other/config.txt"
		r := run(t, false, nil, "", "show", "--archive", h.spec, key)
		if r.code == 0 || strings.Contains(r.stdout, "secret") || !strings.Contains(r.stderr, `".." segment`) {
			t.Errorf("show %s: exit %d, stdout %q, stderr %s", key, r.code, r.stdout, r.stderr)
		}
		r = run(t, false, noPrompt, "", "recover", "--archive", h.spec, "--database-url", hostileDB(t), "--offline", "--yes", "-o", "ndjson", key)
		if r.code == 0 {
			t.Errorf("recover %s: exit 0: %s", key, r.stderr)
		}
		if b, ok := h.get("other/config.txt"); !ok || string(b) != "secret=1" {
			t.Errorf("other/config.txt touched: %q %v", b, ok)
		}
	})
	t.Run("links in a local archive", func(t *testing.T) {
		h := localHostile(t)
		secret := filepath.Join(t.TempDir(), "passwd")
		if err := os.WriteFile(secret, []byte("root:x:0:0:secret"), 0o600); err != nil {
			t.Fatal(err)
		}
		h.put(hostileRoot+"sqs/2024-03-01/real", []byte("{"))
		link := hostileRoot + "sqs/2024-03-01/to-passwd"
		if err := os.Symlink(secret, filepath.Join(filepath.Dir(h.spec), filepath.FromSlash(link))); err != nil {
			t.Fatal(err)
		}
		r := run(t, false, nil, "", "search", "--archive", h.spec, "--date", "2024-03-01", "-o", "keys")
		if r.code != 3 || !strings.Contains(r.stderr, "to-passwd") || !strings.Contains(r.stderr, "symbolic link") {
			t.Errorf("search: exit %d, stderr %s; want the link named as unreadable", r.code, r.stderr)
		}
		r = run(t, false, nil, "", "show", "--archive", h.spec, link)
		if r.code == 0 || strings.Contains(r.stdout+r.stderr, "secret") || !strings.Contains(r.stderr, "symbolic link") {
			t.Errorf("show through a link: exit %d, stdout %q, stderr %s", r.code, r.stdout, r.stderr)
		}
		r = run(t, false, noPrompt, "", "recover", "--archive", h.spec, "--database-url", hostileDB(t), "--date", "2024-03-01",
			"--offline", "--yes", "-o", "ndjson")
		if r.code != 3 {
			t.Errorf("recover: exit %d: %s", r.code, r.stderr)
		}
		for _, k := range h.keys() {
			if strings.Contains(k, "failed-sqs") {
				if b, _ := h.get(k); strings.Contains(string(b), "secret") {
					t.Errorf("the link's target was copied to %s", k)
				}
			}
		}
		if b, err := os.ReadFile(secret); err != nil || string(b) != "root:x:0:0:secret" {
			t.Errorf("the link's target changed: %q %v", b, err)
		}
		if fi, err := os.Lstat(filepath.Join(filepath.Dir(h.spec), filepath.FromSlash(link))); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("the link itself was moved or removed: %v", err)
		}
	})
}

// TestRecoverMovesNeverOverwrite: two unreadable objects with one file name
// in two date folders both go to failed-sqs/<today>/dup.json; the second
// takes dup.json.1, and both keep their own bytes.
func TestRecoverMovesNeverOverwrite(t *testing.T) {
	both(t, func(t *testing.T, h *hostileArchive) {
		h.put(hostileRoot+"sqs/2024-03-01/dup.json", []byte("first {"))
		h.put(hostileRoot+"sqs/2024-03-02/dup.json", []byte("second {"))
		now := func() time.Time { return time.Date(2024, 3, 20, 12, 0, 0, 0, time.UTC) }
		r := runAt(t, now, noPrompt, "", "recover", "--archive", h.spec, "--database-url", hostileDB(t),
			"--offline", "--yes", "-o", "ndjson")
		if r.code != 3 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		var got []string
		for _, k := range h.keys() {
			if strings.HasPrefix(k, hostileRoot) && !isAuditKey(k) {
				b, _ := h.get(k)
				got = append(got, strings.TrimPrefix(k, hostileRoot)+"="+string(b))
			}
		}
		want := []string{"failed-sqs/2024-03-20/dup.json=first {", "failed-sqs/2024-03-20/dup.json.1=second {"}
		other := []string{"failed-sqs/2024-03-20/dup.json=second {", "failed-sqs/2024-03-20/dup.json.1=first {"}
		if !slices.Equal(got, want) && !slices.Equal(got, other) { // either may move first
			t.Errorf("archive after recover:\n got %q\nwant %q", got, want)
		}
	})
}

// TestRecoverLostCopyReply: the copy to failed-sqs succeeds but its reply is
// lost. The original stays (nothing confirmed the copy); the re-run finds
// its own copy, deletes the original and makes no second copy.
func TestRecoverLostCopyReply(t *testing.T) {
	e := newRecoverEnv(t, gen.ReferenceSeed(), nil)
	bucket := testsupport.NewBucket(t, e.s3)
	key := hostileRoot + "sqs/2024-03-01/lost-reply"
	if _, err := e.s3.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key),
		Body: strings.NewReader("{ not json")}); err != nil {
		t.Fatal(err)
	}
	proxy := proxyS3(t)
	proxy.SetLoseReply(func(op string) bool { return op == "PutObject" })
	db := hostileDB(t)
	args := []string{"recover", "--archive", "s3://" + bucket + "/demo", "--database-url", db, "--yes", "-o", "ndjson", "--offline"}
	now := func() time.Time { return time.Date(2024, 3, 20, 12, 0, 0, 0, time.UTC) }
	r := runAt(t, now, noPrompt, "", args...)
	if r.code != 3 {
		t.Fatalf("first run: exit %d: %s", r.code, r.stderr)
	}
	keys := testsupport.KeySet(t, e.s3, bucket, "")
	if !keys[key] {
		t.Fatalf("the original is gone after a copy whose reply was lost: %v", keys)
	}
	proxy.SetLoseReply(nil)
	r = runAt(t, now, noPrompt, "", args...)
	if r.code != 3 {
		t.Fatalf("re-run: exit %d: %s", r.code, r.stderr)
	}
	var got []string
	for _, k := range testsupport.ListKeys(t, e.s3, bucket, "") {
		if !isAuditKey(k) { // the runs' own records
			got = append(got, k)
		}
	}
	want := []string{hostileRoot + "failed-sqs/2024-03-20/lost-reply"}
	if !slices.Equal(got, want) {
		t.Errorf("after the re-run: %q, want only %q (one copy, original deleted)", got, want)
	}
}

// TestRecoverContentFilterLeavesUnreadableAlone: with --granule (or any
// content filter) the unreadable objects of the dates listed are not moved,
// and the plan says so; --include-unreadable, or a date-only selection,
// moves them.
func TestRecoverContentFilterLeavesUnreadableAlone(t *testing.T) {
	dir := t.TempDir()
	store, err := archive.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	var granule string
	var unreadable []string
	err = gen.Generate(gen.Options{Stack: "demo", Count: 80, Seed: 10, Days: 1, Malformed: 0.1,
		Start: time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)}, func(o gen.Object) error {
		if strings.HasPrefix(o.Kind, "malformed") {
			unreadable = append(unreadable, o.Key)
		} else if granule == "" && len(o.Granules) > 0 {
			granule = o.Granules[0]
		}
		return store.Put(context.Background(), o.Key, o.Body)
	})
	if err != nil || granule == "" || len(unreadable) == 0 {
		t.Fatalf("generate: %v, granule %q, %d malformed", err, granule, len(unreadable))
	}
	spec := filepath.Join(dir, "demo")
	db := hostileDB(t)
	r := run(t, false, noPrompt, "", "recover", "--archive", spec, "--database-url", db, "--offline", "--yes",
		"--granule", granule, "-o", "ndjson")
	if !strings.Contains(r.stderr, "left alone:") {
		t.Errorf("the plan does not say unreadable objects are left alone: %s", r.stderr)
	}
	for _, o := range results(t, r.stdout) {
		if o["type"] == "object" && o["result"] == "unreadable" {
			t.Errorf("--granule %s handled unreadable %s (%v)", granule, o["key"], o["action"])
		}
		if o["type"] == "summary" && o["unreadable_left_alone"].(float64) < 1 {
			t.Errorf("summary: %v", o)
		}
	}
	for _, k := range unreadable {
		if _, err := store.Stat(context.Background(), k); err != nil {
			t.Errorf("--granule %s: the unreadable %s is no longer in sqs/: %v", granule, k, err)
		}
	}
	r = run(t, false, noPrompt, "", "recover", "--archive", spec, "--database-url", db, "--offline", "--yes",
		"--status", "SUCCEEDED", "--include-unreadable", "-o", "ndjson")
	moved := 0
	for _, o := range results(t, r.stdout) {
		if o["type"] == "object" && o["result"] == "unreadable" && o["action"] == "moved" {
			moved++
		}
	}
	if moved == 0 {
		t.Errorf("--include-unreadable moved no unreadable object: %s", r.stderr)
	}
}

// TestRecoverRefusesConcurrentRun: while another run holds the archive's
// lock in the database, a second recover of the same archive refuses at
// once with a clear message and touches nothing; a dry run still works.
func TestRecoverRefusesConcurrentRun(t *testing.T) {
	h := localHostile(t)
	h.put(hostileRoot+"sqs/2024-03-01/a", []byte("{"))
	db := hostileDB(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	loc, err := archive.ParseLocation(h.spec)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, cumulusdb.ArchiveLockKey(loc.Identity())); err != nil {
		t.Fatal(err)
	}
	r := run(t, false, noPrompt, "", "recover", "--archive", h.spec, "--database-url", db, "--offline", "--yes")
	if r.code != 1 || !strings.Contains(r.stderr, "another dla recover") {
		t.Errorf("second run: exit %d, stderr %s; want exit 1 naming the other run", r.code, r.stderr)
	}
	if _, ok := h.get(hostileRoot + "sqs/2024-03-01/a"); !ok {
		t.Errorf("the refused run moved an object")
	}
	if r := run(t, false, noPrompt, "", "recover", "--archive", h.spec, "--database-url", db, "--offline", "--dry-run"); r.code != 3 {
		t.Errorf("dry run beside a running recover: exit %d: %s", r.code, r.stderr)
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_unlock($1)`, cumulusdb.ArchiveLockKey(loc.Identity())); err != nil {
		t.Fatal(err)
	}
	if r := run(t, false, noPrompt, "", "recover", "--archive", h.spec, "--database-url", db, "--offline", "--yes"); r.code != 3 {
		t.Errorf("after the lock is released: exit %d: %s", r.code, r.stderr)
	}
	if _, ok := h.get(hostileRoot + "sqs/2024-03-01/a"); ok {
		t.Errorf("the run after the lock was released did not move the unreadable object")
	}
}

// TestS3MistypedStack: a stack with nothing under its dead-letter-archive/
// is a usage error naming the stacks that have one, not "0 matching".
func TestS3MistypedStack(t *testing.T) {
	_, h := hostileS3(t)
	h.put(hostileRoot+"sqs/2024-03-01/a", []byte("{}"))
	h.put("other-stack/dead-letter-archive/sqs/2024-03-01/b", []byte("{}"))
	h.put("not-a-stack/readme", []byte("x"))
	spec := strings.TrimSuffix(h.spec, "/demo") + "/mystak"
	for _, verb := range [][]string{{"search"}, {"stats"}, {"show", "sqs/2024-03-01/a"}} {
		r := run(t, false, nil, "", append(verb, "--archive", spec)...)
		if r.code != 2 || !strings.Contains(r.stderr, "no archive at") || !strings.Contains(r.stderr, "demo, other-stack") ||
			strings.Contains(r.stderr, "matching") {
			t.Errorf("%s on a mistyped stack: exit %d, stderr %s", verb[0], r.code, r.stderr)
		}
	}
}

// TestRecoverRacingWritersDoNotFailMessages: two recovers of two copies of
// one archive (two locks: the archive names differ) write the same rows at
// once. A unique violation between them is a race, retried, never a
// message failure moved to failed-sqs.
func TestRecoverRacingWritersDoNotFailMessages(t *testing.T) {
	db := hostileDB(t)
	var specs []string
	for range 2 {
		dir := t.TempDir()
		generateInto(t, dir, gen.Options{Stack: "demo", Count: 300, Seed: 77, Days: 1, Malformed: -1, MinGranules: 1, MaxGranules: 3,
			Start: time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)})
		specs = append(specs, filepath.Join(dir, "demo"))
	}
	outs := make([]runResult, len(specs))
	done := make(chan int)
	for i, spec := range specs {
		go func() {
			outs[i] = run(t, false, noPrompt, "", "recover", "--archive", spec, "--database-url", db, "--offline", "--yes",
				"--concurrency", "8", "-o", "ndjson")
			done <- i
		}()
	}
	<-done
	<-done
	for i, r := range outs {
		for _, o := range results(t, r.stdout) {
			if o["type"] == "object" && strings.Contains(fmt.Sprint(o["error"]), "23505") {
				t.Errorf("run %d: %s failed on a race: %s", i, o["key"], o["error"])
			}
		}
	}
}
