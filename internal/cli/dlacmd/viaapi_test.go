package dlacmd

import (
	"context"
	"encoding/json"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/cli/cmdutil"
	"github.com/deadletter/deadletter/internal/cli/iostreams"
	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/testsupport"
	"github.com/deadletter/deadletter/internal/testsupport/fakecumulus"
	"github.com/deadletter/deadletter/internal/workflow/apirecover"
)

const testAPIToken = "tok-9f2c-secret"

// viaAPIEnv is the sample archive in versitygw and a fake Cumulus API whose
// recovery runs over the same bucket. Objects whose error is a Knex timeout
// fail to write; the rest are written.
type viaAPIEnv struct {
	c      *s3.Client
	bucket string
	api    *fakecumulus.Server
	before map[string]string // key → body, the whole archive
}

func newViaAPIEnv(t *testing.T) *viaAPIEnv {
	t.Helper()
	e := &viaAPIEnv{c: testsupport.S3Client(t)}
	e.bucket = testsupport.NewBucket(t, e.c)
	testsupport.UploadTree(t, e.c, e.bucket, sampleArchive, "demo/")
	e.api = fakecumulus.New(t, testAPIToken, "demo", func(bucket string) archive.Store { return archive.NewS3(e.c, bucket) })
	e.api.Written = func(_ string, raw []byte) bool { return !strings.Contains(string(raw), "KnexTimeoutError") }
	e.api.RunningPolls = 2
	e.before = e.snapshot(t)
	testsupport.SetAWSEnv(t, map[string]string{"AWS_ENDPOINT_URL_S3": testsupport.S3Endpoint(t)})
	return e
}

func (e *viaAPIEnv) snapshot(t *testing.T) map[string]string {
	t.Helper()
	store := archive.NewS3(e.c, e.bucket)
	out := map[string]string{}
	for _, k := range testsupport.ListKeys(t, e.c, e.bucket, "") {
		if isAuditKey(k) { // the runs' own records
			continue
		}
		b, err := store.Get(context.Background(), k)
		if err != nil {
			t.Fatal(err)
		}
		out[k] = string(b)
	}
	return out
}

// recover runs dla recover --via-api on the archive with token; the
// token must never be printed.
func (e *viaAPIEnv) recover(t *testing.T, token string, args ...string) runResult {
	t.Helper()
	return e.recoverWith(t, context.Background(), token, "", args...)
}

// recoverIn is recover with the test's token, stdin and a context of the
// test's.
func (e *viaAPIEnv) recoverIn(t *testing.T, ctx context.Context, stdin string, args ...string) runResult {
	t.Helper()
	return e.recoverWith(t, ctx, testAPIToken, stdin, args...)
}

func (e *viaAPIEnv) recoverWith(t *testing.T, ctx context.Context, token, stdin string, args ...string) runResult {
	t.Helper()
	return runViaAPI(t, ctx, token, stdin, append([]string{"recover", "--archive", "s3://" + e.bucket + "/demo", "--via-api", e.api.URL}, args...)...)
}

// runViaAPI runs dla in-process with token as $CUMULUS_API_TOKEN, no
// prompt and short polls; the test's token must never be printed.
func runViaAPI(t *testing.T, ctx context.Context, token, stdin string, args ...string) runResult {
	t.Helper()
	ios, in, out, errOut := iostreams.Test()
	in.WriteString(stdin)
	env := map[string]string{"CUMULUS_API_TOKEN": token, "DEADLETTER_NO_PROMPT": "1"}
	getenv := func(k string) string { return env[k] }
	ios.SetEnv(getenv)
	f := NewFactory(ios, getenv)
	f.APIPoll = 5 * time.Millisecond
	code := Run(ctx, f, args)
	r := runResult{code: code, stdout: out.String(), stderr: errOut.String()}
	if strings.Contains(r.stdout+r.stderr, testAPIToken) {
		t.Fatalf("the token was printed:\n%s\n%s", r.stdout, r.stderr)
	}
	return r
}

// Every object of the selection ends where Cumulus's recovery puts it
// (written: deleted; failed: failed-sqs/<its date>/<its name>), or, when
// Cumulus could not read it, back where it was (--cleanup); nothing else in
// the bucket changes, and the staging folder ends empty.
func TestRecoverViaAPI(t *testing.T) {
	e := newViaAPIEnv(t)
	e.api.FailPosts = 1 // a 503 first: retried, one operation started
	r := e.recover(t, testAPIToken, "--date", "2024-03-03", "--yes", "--cleanup", "-o", "json")
	if r.code != cmdutil.ExitPartial { // failures and an unreadable object
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var res apirecover.Result
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	posts := e.api.Posts()
	if len(posts) != 1 || posts[0]["bucket"] != e.bucket || posts[0]["path"] != res.Staging ||
		!strings.HasPrefix(res.Staging, "demo/dead-letter-archive/recover-staging/") {
		t.Fatalf("posts %v, staging %q", posts, res.Staging)
	}
	after := e.snapshot(t)
	root := dla.Layout{Stack: "demo"}
	selected := 0
	for k, body := range e.before {
		info := root.ParseKey(k)
		if info.Area != dla.AreaSQS || info.Date != "2024-03-03" {
			if after[k] != body {
				t.Errorf("%s is not in the selection, yet it changed", k)
			}
			continue
		}
		selected++
		_, still := after[k]
		failedKey := root.FailedKey(k, gjson.Get(body, "time").String(), time.Now())
		switch {
		case !json.Valid([]byte(body)): // dla cannot read it: left out, in place
			if after[k] != body {
				t.Errorf("%s (not JSON) is not in place", k)
			}
		case strings.Contains(body, "KnexTimeoutError"):
			if still || after[failedKey] != body {
				t.Errorf("%s failed to write: want it at %s only", k, failedKey)
			}
		default:
			if still {
				t.Errorf("%s was written, yet it is still there", k)
			}
		}
	}
	for k := range after {
		if strings.Contains(k, "recover-staging/") {
			t.Errorf("%s left in staging after --cleanup", k)
		}
	}
	if res.Staged != selected-1 || res.Succeeded+res.Failed != selected-1 || res.Status != "SUCCEEDED" || res.Failed == 0 || res.MovedBack != 0 ||
		len(res.LeftOut) != 1 || res.LeftOut[0].Reason != apirecover.LeftOutUnreadable {
		t.Errorf("result %+v for %d selected objects", res, selected)
	}
}

// A token the API refuses: nothing is recovered and every staged object
// goes back where it was.
func TestRecoverViaAPIUnauthorized(t *testing.T) {
	e := newViaAPIEnv(t)
	r := e.recover(t, "not-the-token", "--date", "2024-03-02", "--yes")
	// Found by the check before staging: nothing is staged at all.
	if r.code == 0 || !strings.Contains(r.stderr, "refused the token") || !strings.Contains(r.stderr, "nothing was staged") {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if after := e.snapshot(t); !mapsEqual(after, e.before) {
		t.Errorf("the archive changed after a refused token")
	}
	if len(e.api.Posts()) != 0 {
		t.Error("an operation was started")
	}
}

// An operation that fails: exit 1, its staged objects reported, and moved
// back with --cleanup-staging afterwards.
func TestRecoverViaAPIOperationFails(t *testing.T) {
	e := newViaAPIEnv(t)
	e.api.FailOperation = true
	r := e.recover(t, testAPIToken, "--date", "2024-03-02", "--yes")
	if r.code != cmdutil.ExitFailure || !strings.Contains(r.stderr, "TASK_FAILED") || !strings.Contains(r.stderr, "left in staging") {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	staging := e.api.Posts()[0]["path"].(string)
	mid := e.snapshot(t)
	left := 0
	for k := range mid {
		if strings.HasPrefix(k, staging) {
			left++
		}
	}
	if left == 0 {
		t.Fatal("nothing in staging after a failed operation")
	}
	r = e.recover(t, testAPIToken, "--cleanup-staging", staging)
	if r.code != 0 {
		t.Fatalf("--cleanup-staging: exit %d: %s", r.code, r.stderr)
	}
	if after := e.snapshot(t); !mapsEqual(after, e.before) {
		var diff []string
		for k := range after {
			if _, ok := e.before[k]; !ok {
				diff = append(diff, "+"+k)
			}
		}
		for k := range e.before {
			if _, ok := after[k]; !ok {
				diff = append(diff, "-"+path.Base(k))
			}
		}
		slices.Sort(diff)
		t.Errorf("after --cleanup-staging the archive is not as it was: %v", diff)
	}
}

func TestRecoverViaAPIRefusals(t *testing.T) {
	for name, args := range map[string][]string{
		"no token":          {"recover", "--archive", "s3://b/s", "--via-api", "https://api.example", "--yes"},
		"local archive":     {"recover", "--archive", sampleArchive, "--via-api", "https://api.example", "--yes"},
		"database url":      {"recover", "--archive", "s3://b/s", "--via-api", "https://api.example", "--database-url", "postgres://x", "--yes"},
		"not a URL":         {"recover", "--archive", "s3://b/s", "--via-api", "api.example", "--yes"},
		"cleanup alone":     {"recover", "--archive", "s3://b/s", "--cleanup", "--yes"},
		"foreign staging":   {"recover", "--archive", "s3://b/s", "--via-api", "https://api.example", "--cleanup-staging", "s/dead-letter-archive/sqs/"},
		"token as a flag ✗": {"recover", "--archive", "s3://b/s", "--via-api", "https://api.example", "--token", "x"},
	} {
		env := map[string]string{}
		if name != "no token" {
			env["CUMULUS_API_TOKEN"] = "x"
		}
		if r := run(t, false, env, "", args...); r.code != cmdutil.ExitUsage {
			t.Errorf("%s: exit %d: %s", name, r.code, r.stderr)
		}
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// An API that cannot be reached (a refused connection, a host that does
// not resolve) is found by the check before anything is staged, in one
// line that names the Cumulus API, not an AWS endpoint.
func TestRecoverViaAPIUnreachableStagesNothingAndNamesTheAPI(t *testing.T) {
	e := newViaAPIEnv(t)
	for _, c := range []struct{ url, why string }{
		{"http://127.0.0.1:1", "connection refused"},
		{"http://no-such-host.invalid", `the host "no-such-host.invalid" does not resolve`},
	} {
		r := runViaAPI(t, context.Background(), testAPIToken, "", "recover", "--archive", "s3://"+e.bucket+"/demo", "--via-api", c.url, "--date", "2024-03-02", "--yes")
		code, line := r.code, r.stderr
		if code != cmdutil.ExitFailure || !strings.Contains(line, "cannot reach the Cumulus API at "+c.url) || !strings.Contains(line, c.why) ||
			!strings.Contains(line, "nothing was staged") || strings.Contains(line, "endpoint-url") || strings.Contains(line, "--cleanup-staging") {
			t.Errorf("%s: exit %d:\n%s", c.url, code, line)
		}
		if after := e.snapshot(t); !mapsEqual(after, e.before) {
			t.Errorf("%s: the archive changed", c.url)
		}
	}
}

// Cumulus's recovery copies a failure to failed-sqs/<date of its time>/<its
// file name> and replaces what is there. Two objects of the selection with
// one such name, or one whose name is taken already, would lose a message:
// only the first of each name goes to Cumulus, the others stay where they
// are, are named with the reason, and the run says how to recover them
// locally (exit 3). Nothing is ever replaced.
func TestRecoverViaAPINeverLetsCumulusReplaceAFailure(t *testing.T) {
	e := newViaAPIEnv(t)
	store := archive.NewS3(e.c, e.bucket)
	ctx := context.Background()
	body := func(marker string) []byte {
		return []byte(`{"time":"2024-03-02T10:00:00Z","error":"KnexTimeoutError: Knex: Timeout acquiring a connection","marker":"` + marker +
			`","body":"{\"source\":\"aws.states\",\"detail-type\":\"Step Functions Execution Status Change\",\"detail\":{\"status\":\"SUCCEEDED\"}}"}`)
	}
	objects := map[string][]byte{
		"demo/dead-letter-archive/sqs/2024-02-27/dup.json":      body("first"),
		"demo/dead-letter-archive/sqs/2024-02-28/dup.json":      body("second"),
		"demo/dead-letter-archive/sqs/2024-02-28/x.json":        body("x"),
		"demo/dead-letter-archive/failed-sqs/2024-03-02/x.json": []byte(`{"time":"2024-03-02T09:00:00Z","marker":"already failed"}`),
	}
	for k, b := range objects {
		if err := store.Put(ctx, k, b); err != nil {
			t.Fatal(err)
		}
	}
	before := e.snapshot(t)
	r := e.recover(t, testAPIToken, "--from", "2024-02-27", "--to", "2024-02-28", "--yes", "--cleanup", "-o", "json")
	if r.code != cmdutil.ExitPartial {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var res apirecover.Result
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	after := e.snapshot(t)
	// Every body is still somewhere, once.
	where := map[string][]string{}
	for k, b := range after {
		where[b] = append(where[b], k)
	}
	for k, b := range before {
		if len(where[b]) != 1 {
			t.Errorf("%s: its bytes are at %v after the run", k, where[b])
		}
	}
	if got := string(after["demo/dead-letter-archive/failed-sqs/2024-03-02/dup.json"]); got != string(objects["demo/dead-letter-archive/sqs/2024-02-27/dup.json"]) {
		t.Errorf("failed-sqs/2024-03-02/dup.json holds %q, want the first dup.json", got)
	}
	for _, k := range []string{"demo/dead-letter-archive/sqs/2024-02-28/dup.json", "demo/dead-letter-archive/sqs/2024-02-28/x.json",
		"demo/dead-letter-archive/failed-sqs/2024-03-02/x.json"} {
		if string(after[k]) != string(before[k]) {
			t.Errorf("%s was not left as it was", k)
		}
	}
	left := map[string]string{}
	for _, l := range res.LeftOut {
		left[l.Key] = l.Destination
	}
	if len(left) != 2 || left["demo/dead-letter-archive/sqs/2024-02-28/dup.json"] != "demo/dead-letter-archive/failed-sqs/2024-03-02/dup.json" ||
		left["demo/dead-letter-archive/sqs/2024-02-28/x.json"] != "demo/dead-letter-archive/failed-sqs/2024-03-02/x.json" {
		t.Errorf("left out %+v", res.LeftOut)
	}
	if !strings.Contains(r.stderr, "recover them here instead") {
		t.Errorf("no local command:\n%s", r.stderr)
	}
}

// A --via-api run that stops with objects in its staging folder (killed
// while staging, or an operation that failed) leaves them where no verb
// lists them: every verb that opens the archive warns, with the count and
// the command that moves them back (the API from the run's manifest), and
// the warning ends once they are back.
func TestStagedObjectsAreWarnedAboutUntilMovedBack(t *testing.T) {
	e := newViaAPIEnv(t)
	e.api.FailOperation = true // Cumulus processes nothing: all stays in staging
	r := e.recover(t, testAPIToken, "--date", "2024-03-02", "--yes")
	if r.code != cmdutil.ExitFailure || !strings.Contains(r.stderr, "staging into demo/dead-letter-archive/recover-staging/") {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	staging := e.api.Posts()[0]["path"].(string)
	if _, ok := e.snapshot(t)[strings.TrimSuffix(staging, "/")+".json"]; !ok {
		t.Fatalf("no manifest beside %s", staging)
	}
	// A run killed while staging: a second folder with two objects and its
	// manifest, as it would be left.
	store := archive.NewS3(e.c, e.bucket)
	killed := "demo/dead-letter-archive/recover-staging/20261126T000000Z-0badc0de/"
	for _, k := range []string{"sqs/2024-03-05/a", "sqs/2024-03-05/b"} {
		if err := store.Put(context.Background(), killed+k, []byte(`{"time":"2024-03-05T00:00:00Z"}`)); err != nil {
			t.Fatal(err)
		}
	}
	if err := store.Put(context.Background(), strings.TrimSuffix(killed, "/")+".json", []byte(`{"type":"recover_staging","api":"https://cumulus.example/api"}`)); err != nil {
		t.Fatal(err)
	}
	for _, verb := range [][]string{{"search", "--date", "2024-03-02"}, {"stats"}} {
		r := run(t, false, nil, "", append(append([]string{}, verb...), "--archive", "s3://"+e.bucket+"/demo")...)
		for _, want := range []string{
			"in " + staging + ", staged by a recover --via-api that did not finish",
			"--via-api " + e.api.URL + " --cleanup-staging " + staging,
			"2 objects in " + killed,
			"--via-api https://cumulus.example/api --cleanup-staging " + killed,
		} {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("%s: stderr lacks %q:\n%s", verb[0], want, r.stderr)
			}
		}
	}
	r = e.recover(t, testAPIToken, "--cleanup-staging", staging)
	if r.code != 0 {
		t.Fatalf("--cleanup-staging: exit %d: %s", r.code, r.stderr)
	}
	if _, ok := e.snapshot(t)[strings.TrimSuffix(staging, "/")+".json"]; ok {
		t.Errorf("the manifest of %s outlived its objects", staging)
	}
	r = run(t, false, nil, "", "stats", "--archive", "s3://"+e.bucket+"/demo")
	if strings.Contains(r.stderr, staging) || !strings.Contains(r.stderr, killed) {
		t.Errorf("after the cleanup of one folder:\n%s", r.stderr)
	}
}
