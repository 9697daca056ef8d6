package dlacmd

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/deadletter/deadletter/internal/cli/cmdutil"
	"github.com/deadletter/deadletter/internal/cli/iostreams"
	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/testsupport"
)

const legacyRoot = "demo/dead-letter-archive/sqs/"

// migrateEnv is the sample archive in versitygw (9 flat legacy objects among
// dated ones) plus nested legacy objects: two with the same file name and
// date, and one that is not JSON.
type migrateEnv struct {
	c      *s3.Client
	bucket string
	proxy  *testsupport.Proxy
	legacy map[string]string // key → body, every legacy object put
	dated  map[string]string // key → body, the date-folder objects
}

func newMigrateEnv(t *testing.T) *migrateEnv {
	t.Helper()
	e := &migrateEnv{c: testsupport.S3Client(t), legacy: map[string]string{}, dated: map[string]string{}}
	e.bucket = testsupport.NewBucket(t, e.c)
	testsupport.UploadTree(t, e.c, e.bucket, sampleArchive, "demo/")
	flat, _ := filepath.Glob(filepath.Join(sampleArchive, "dead-letter-archive/sqs/*.json"))
	if len(flat) < 3 {
		t.Fatalf("the sample archive has %d flat legacy objects", len(flat))
	}
	dayOne, _ := filepath.Glob(filepath.Join(sampleArchive, "dead-letter-archive/sqs/2024-03-01/*"))
	for _, p := range flat {
		b, _ := os.ReadFile(p)
		e.legacy[legacyRoot+filepath.Base(p)] = string(b)
	}
	// Nested legacy objects: the same file name twice, different bodies.
	a, _ := os.ReadFile(dayOne[0])
	b, _ := os.ReadFile(dayOne[1])
	e.legacy[legacyRoot+"2020/1/2/03/twice"] = string(a)
	e.legacy[legacyRoot+"2020/1/2/04/twice"] = string(b)
	e.legacy[legacyRoot+"2020/1/2/05/broken.json"] = `{"Body": "{\"detail\": {` // truncated
	for k, v := range e.legacy {
		e.put(t, k, v)
	}
	for _, k := range testsupport.ListKeys(t, e.c, e.bucket, legacyRoot) {
		if _, ok := e.legacy[k]; !ok {
			e.dated[k] = e.get(t, k)
		}
	}
	e.proxy = testsupport.NewProxy(t, testsupport.S3Endpoint(t))
	testsupport.SetAWSEnv(t, map[string]string{"AWS_ENDPOINT_URL_S3": e.proxy.URL})
	return e
}

func (e *migrateEnv) put(t *testing.T, key, body string) {
	t.Helper()
	if _, err := e.c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(e.bucket), Key: aws.String(key), Body: strings.NewReader(body)}); err != nil {
		t.Fatal(err)
	}
}

func (e *migrateEnv) get(t *testing.T, key string) string {
	t.Helper()
	out, err := e.c.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(e.bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func (e *migrateEnv) migrate(t *testing.T, args ...string) (runResult, []MigrateResult) {
	t.Helper()
	r := run(t, false, map[string]string{"DEADLETTER_NO_PROMPT": "1"}, "",
		append([]string{"migrate-legacy", "--archive", "s3://" + e.bucket + "/demo", "--offline", "-o", "ndjson"}, args...)...)
	var out []MigrateResult
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		if line == "" {
			continue
		}
		var m MigrateResult
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("%v: %q", err, line)
		}
		out = append(out, m)
	}
	return r, out
}

// check verifies that nothing was lost: every date-folder object is as it
// was, every legacy object is either still in place (as it was) or moved
// to exactly one date-folder key that decodes to the same record, and
// nothing else exists.
func (e *migrateEnv) check(t *testing.T, wantLeft []string) {
	t.Helper()
	keys := testsupport.ListKeys(t, e.c, e.bucket, legacyRoot)
	seen := map[string]bool{}
	for k, v := range e.dated {
		if got := e.get(t, k); got != v {
			t.Errorf("date-folder object %s changed", k)
		}
		seen[k] = true
	}
	var left []string
	for k, v := range e.legacy {
		if slices.Contains(keys, k) {
			left = append(left, k)
			if e.get(t, k) != v {
				t.Errorf("legacy object %s left in place but changed", k)
			}
			seen[k] = true
		}
	}
	slices.Sort(left)
	slices.Sort(wantLeft)
	if !slices.Equal(left, wantLeft) {
		t.Errorf("legacy objects left in place: %q, want %q", left, wantLeft)
	}
	// Every other key is a migrated copy: one per moved legacy object, each
	// decoding to its source's record.
	var sources []*dla.Decoded
	for k, v := range e.legacy {
		if !slices.Contains(left, k) {
			d, err := dla.Decode([]byte(v))
			if err != nil {
				t.Fatalf("legacy %s: %v", k, err)
			}
			sources = append(sources, d)
		}
	}
	var copies int
	for _, k := range keys {
		if seen[k] {
			continue
		}
		copies++
		info := dla.Layout{Stack: "demo"}.ParseKey(k)
		if info.Date == "" {
			t.Errorf("%s is neither an original nor in a date folder", k)
			continue
		}
		d, err := dla.Decode([]byte(e.get(t, k)))
		if err != nil {
			t.Errorf("migrated %s does not decode: %v", k, err)
			continue
		}
		if d.Generation != dla.GenDLARecord {
			t.Errorf("migrated %s is a %s, want a DLA record", k, d.Generation)
		}
		i := slices.IndexFunc(sources, func(s *dla.Decoded) bool {
			return s.ExecutionArn == d.ExecutionArn && s.Status == d.Status && s.Error == d.Error &&
				s.CollectionID == d.CollectionID && slices.Equal(s.Granules, d.Granules) && s.Message == d.Message
		})
		if i < 0 {
			t.Errorf("migrated %s matches no legacy object's record", k)
			continue
		}
		sources = slices.Delete(sources, i, i+1)
	}
	if len(sources) != 0 {
		t.Errorf("%d moved legacy objects have no copy", len(sources))
	}
}

func TestMigrateLegacy(t *testing.T) {
	e := newMigrateEnv(t)
	broken := legacyRoot + "2020/1/2/05/broken.json"
	all := []string{}
	for k := range e.legacy {
		all = append(all, k)
	}

	// --dry-run plans every move and changes nothing.
	r, plan := e.migrate(t, "--dry-run")
	if r.code != cmdutil.ExitPartial || len(plan) != len(e.legacy) {
		t.Fatalf("dry run: exit %d, %d results: %s", r.code, len(plan), r.stderr)
	}
	e.check(t, all)
	if e.proxy.Calls()["PutObject"]+e.proxy.Calls()["DeleteObject"] != 0 {
		t.Fatalf("--dry-run wrote: %v", e.proxy.Calls())
	}

	// No --yes without a terminal: a usage error, nothing moved.
	if r := run(t, false, map[string]string{"DEADLETTER_NO_PROMPT": "1"}, "", "migrate-legacy", "--archive", "s3://"+e.bucket+"/demo", "--offline"); r.code != cmdutil.ExitUsage {
		t.Fatalf("without --yes: exit %d", r.code)
	}

	r, results := e.migrate(t, "--yes")
	if r.code != cmdutil.ExitPartial { // the broken one
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	targets := map[string]bool{}
	for _, m := range results {
		switch {
		case m.Key == broken:
			if m.Result != "unreadable" || m.Error == nil {
				t.Errorf("broken: %+v", m)
			}
		case m.Result != "moved" || m.Target == nil:
			t.Errorf("%s: %+v", m.Key, m)
		default:
			targets[*m.Target] = true
		}
	}
	if len(targets) != len(e.legacy)-1 {
		t.Errorf("%d distinct targets for %d moved objects", len(targets), len(e.legacy)-1)
	}
	if !targets[legacyRoot+"2024-03-01/twice"] && !targets[legacyRoot+"2024-03-01/twice.1"] {
		t.Errorf("the two objects named twice: targets %v", targets)
	}
	e.check(t, []string{broken})

	// Idempotent: a second run moves nothing more.
	r, again := e.migrate(t, "--yes")
	if r.code != cmdutil.ExitPartial || len(again) != 1 || again[0].Key != broken {
		t.Fatalf("second run: exit %d, %+v", r.code, again)
	}
	e.check(t, []string{broken})

	// Every migrated object is found by a search of its date folders
	// without --include-legacy, as Athena's table would see it.
	s := run(t, false, nil, "", "search", "--archive", "s3://"+e.bucket+"/demo", "-o", "keys", "--ignore-unreadable")
	for k := range targets {
		if !strings.Contains(s.stdout, k+"\n") {
			t.Errorf("search does not find %s", k)
		}
	}
}

// A delete that fails leaves the original and its copy; the next run
// reuses the copy (no second one) and deletes the original. A put whose
// reply is lost is not made twice.
func TestMigrateLegacyFaultBetweenCopyAndDelete(t *testing.T) {
	e := newMigrateEnv(t)
	broken := legacyRoot + "2020/1/2/05/broken.json"
	e.proxy.SetHook(func(op string, _ []byte) ([]byte, *testsupport.Reply) {
		if op == "DeleteObject" {
			return nil, &testsupport.Reply{Status: 503, Body: "<Error><Code>SlowDown</Code><Message>injected</Message></Error>"}
		}
		return nil, nil
	})
	r, results := e.migrate(t, "--yes", "--concurrency", "2")
	if r.code != cmdutil.ExitFailure {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	failed := 0
	for _, m := range results {
		if m.Result == "failed" {
			failed++
			if m.Target == nil || m.Error == nil || !strings.Contains(*m.Error, "could not be deleted") {
				t.Errorf("%+v", m)
			}
		}
	}
	if failed != len(e.legacy)-1 {
		t.Fatalf("%d failed, want %d", failed, len(e.legacy)-1)
	}
	// Every original is still there, beside its copy.
	keys := testsupport.ListKeys(t, e.c, e.bucket, legacyRoot)
	for k := range e.legacy {
		if !slices.Contains(keys, k) {
			t.Fatalf("%s was deleted by a failing run", k)
		}
	}

	e.proxy.SetHook(nil)
	e.proxy.LoseFirstReplies("DeleteObject", 1)
	r, results = e.migrate(t, "--yes")
	if r.code != cmdutil.ExitPartial {
		t.Fatalf("second run: exit %d: %s", r.code, r.stderr)
	}
	for _, m := range results {
		if m.Key != broken && m.Result != "moved" {
			t.Errorf("second run: %+v", m)
		}
	}
	e.check(t, []string{broken})
}

// A put that took effect but whose reply was lost is retried by the SDK,
// finds its own copy (If-None-Match refuses the second put) and reuses it:
// one copy per object, every original deleted.
func TestMigrateLegacyLostPutReply(t *testing.T) {
	e := newMigrateEnv(t)
	broken := legacyRoot + "2020/1/2/05/broken.json"
	var puts atomic.Int32
	e.proxy.SetLoseReply(func(op string) bool { return op == "PutObject" && puts.Add(1) == 1 })
	// --no-audit: the first put is then the first object's copy.
	r, results := e.migrate(t, "--yes", "--concurrency", "1", "--no-audit")
	if r.code != cmdutil.ExitPartial {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, m := range results {
		if m.Key != broken && m.Result != "moved" {
			t.Errorf("%+v", m)
		}
	}
	e.check(t, []string{broken})
	if puts.Load() < 2 {
		t.Fatalf("the lost put was not retried: %d puts", puts.Load())
	}
}

// epipeAfter is a stdout whose reader goes away after n writes.
type epipeAfter struct{ n int }

func (w *epipeAfter) Write(p []byte) (int, error) {
	if w.n <= 0 {
		return 0, syscall.EPIPE
	}
	w.n--
	return len(p), nil
}

// A closed stdout (`dla migrate-legacy -o ndjson | head -1`) stops the
// printing and the starting of moves, never a move half done: the run exits
// non-zero saying why, and every legacy object is either where it was or
// moved exactly once.
func TestMigrateLegacyClosedStdout(t *testing.T) {
	e := newMigrateEnv(t)
	ios, _, _, errOut := iostreams.Test()
	ios.Out = &epipeAfter{n: 1}
	getenv := func(k string) string { return map[string]string{"DEADLETTER_NO_PROMPT": "1"}[k] }
	ios.SetEnv(getenv)
	f := NewFactory(ios, getenv)
	code := Run(context.Background(), f, []string{"migrate-legacy", "--archive", "s3://" + e.bucket + "/demo", "--offline", "--yes", "--concurrency", "1", "-o", "ndjson"})
	if code == 0 || !strings.Contains(errOut.String(), "stdout was closed") {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	keys := testsupport.ListKeys(t, e.c, e.bucket, legacyRoot)
	var left []string
	for k := range e.legacy {
		if slices.Contains(keys, k) {
			left = append(left, k)
		}
	}
	if len(left) == 0 || len(left) == len(e.legacy) {
		t.Fatalf("%d of %d legacy objects left: the closed stdout did not stop the run part way", len(left), len(e.legacy))
	}
	e.check(t, left)
}
