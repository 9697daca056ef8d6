package dlacmd

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/audit"
	"github.com/deadletter/deadletter/internal/cli/cmdutil"
	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/dla/gen"
	"github.com/deadletter/deadletter/internal/testsupport"
	"github.com/deadletter/deadletter/internal/workflow/apirecover"
)

const testARN = "arn:aws:sts::123456789012:assumed-role/ops-oncall/alice"

var auditNow = func() time.Time { return time.Date(2024, 3, 20, 12, 0, 0, 0, time.UTC) }

// auditRuns reads back every run recorded in the archive's audit folder,
// newest first, with its items.
func auditRuns(t *testing.T, store archive.Store, stack string) []audit.Run {
	t.Helper()
	ctx := context.Background()
	base := dla.Layout{Stack: stack}.AuditPrefix()
	runs, problems, err := audit.List(ctx, store, base, audit.Filter{})
	if err != nil || len(problems) > 0 {
		t.Fatalf("reading the audit records: %v %v", err, problems)
	}
	for i := range runs {
		if err := runs[i].LoadItems(ctx, store); err != nil {
			t.Fatal(err)
		}
	}
	return runs
}

// auditBytes is every byte of every audit record in the bucket, for the
// secrets check.
func auditBytes(t *testing.T, e *recoverEnv, bucket string) string {
	t.Helper()
	store := archive.NewS3(e.s3, bucket)
	var b strings.Builder
	for _, k := range testsupport.ListKeys(t, e.s3, bucket, "demo/dead-letter-archive/audit/") {
		body, err := store.Get(context.Background(), k)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(body)
	}
	return b.String()
}

// A recover over S3 leaves one record: the plan names its folder; the
// started record holds the verb, the actor (the STS caller identity),
// the reason, the archive, the database's host, port, name and schema
// generation, the selection and the plan's counts; one item per object
// with the key, result, action and where it moved, as -o ndjson reported
// them; and the finished record the summary's counts and the exit code.
func TestRecoverLeavesARecordWhoseItemsAndCountsAreTheRuns(t *testing.T) {
	e := newRecoverEnv(t, gen.ReferenceSeed(), nil)
	testsupport.STSResponder(t, testARN, "123456789012")
	bucket := generatedArchive(t, e, 30)
	// The test server trusts its clients: a password in the URL is
	// ignored by it, and must be left out of the record.
	u, _ := url.Parse(e.dbURL)
	u.User = url.UserPassword(u.User.Username(), "hunter2-pw")
	r := runAt(t, auditNow, e.env, "", "recover", "--archive", "s3://"+bucket+"/demo", "--database-url", u.String(), "--yes", "--offline",
		"--date", "2024-03-01", "--reason", "INC-4411", "-o", "ndjson")
	if r.code != 0 && r.code != 3 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	runs := auditRuns(t, archive.NewS3(e.s3, bucket), "demo")
	if len(runs) != 1 {
		t.Fatalf("%d records, want 1", len(runs))
	}
	run := runs[0]
	if want := "audit: s3://" + bucket + "/" + run.Folder; !strings.Contains(r.stderr, want+"\n") ||
		!strings.HasPrefix(run.Folder, "demo/dead-letter-archive/audit/2024-03-20/") {
		t.Errorf("the plan does not name the record %s:\n%s", run.Folder, r.stderr)
	}
	db := run.Target.Database
	if run.Tool != "dla" || run.Verb != "recover" || run.Reason != "INC-4411" || run.Actor.AWSARN == nil || *run.Actor.AWSARN != testARN ||
		run.Actor.OSUser == "" || run.Actor.Host == "" || run.Target.Archive != "s3://"+bucket+"/demo" ||
		db == nil || db.Host != u.Hostname() || db.Port != u.Port() || db.Name != strings.TrimPrefix(u.Path, "/") || db.Generation == "" {
		t.Errorf("started record %+v, target %+v, database %+v", run.Started, run.Target, db)
	}
	if run.Selection["date"] != "2024-03-01" || run.Plan["objects"] == 0 {
		t.Errorf("selection %v, plan %v", run.Selection, run.Plan)
	}
	var sum map[string]any
	objects := map[string]map[string]any{}
	for _, o := range results(t, r.stdout) {
		switch o["type"] {
		case "summary":
			sum = o
		case "object":
			objects[o["key"].(string)] = o
		}
	}
	if run.Finished == nil || run.Finished.ExitCode != r.code || run.Finished.Interrupted {
		t.Fatalf("finished record %+v, exit %d", run.Finished, r.code)
	}
	for _, c := range []string{"written", "dropped", "failed", "unreadable", "deleted", "moved", "left", "processed"} {
		if float64(run.Finished.Counts[c]) != sum[c] {
			t.Errorf("count %s: record %d, summary %v", c, run.Finished.Counts[c], sum[c])
		}
	}
	if len(run.Items) != len(objects) || run.Finished.Items != len(objects) || len(objects) != run.Plan["objects"] {
		t.Fatalf("%d items, %d objects reported, plan %d", len(run.Items), len(objects), run.Plan["objects"])
	}
	granules := 0
	for _, it := range run.Items {
		o := objects[it.Key]
		if o == nil || o["result"] != it.Result || o["action"] != it.Action || (o["moved_to"] != nil && o["moved_to"] != it.MovedTo) {
			t.Errorf("item %+v, reported %v", it, o)
		}
		granules += len(it.Granules)
		if it.Execution == "" && it.Result != "unreadable" {
			t.Errorf("item %s names no execution", it.Key)
		}
	}
	if granules == 0 {
		t.Error("no item names a granule")
	}
	if pw, _ := u.User.Password(); strings.Contains(auditBytes(t, e, bucket), pw) {
		t.Error("the database password is in the record")
	}
}

// A dry run and --no-audit leave no record; --no-audit's plan says so.
func TestRecoverDryRunAndNoAuditLeaveNoRecord(t *testing.T) {
	e := newRecoverEnv(t, gen.ReferenceSeed(), nil)
	bucket := generatedArchive(t, e, 6)
	args := []string{"recover", "--archive", "s3://" + bucket + "/demo", "--database-url", e.dbURL, "--offline"}
	r := runAt(t, auditNow, e.env, "", append(args, "--dry-run")...)
	if r.code != 0 && r.code != 3 || !strings.Contains(r.stderr, "audit: none (dry run") {
		t.Fatalf("dry run: exit %d: %s", r.code, r.stderr)
	}
	r = runAt(t, auditNow, e.env, "", append(args, "--yes", "--no-audit")...)
	if r.code != 0 && r.code != 3 || !strings.Contains(r.stderr, "audit: none (--no-audit)\n") {
		t.Fatalf("--no-audit: exit %d: %s", r.code, r.stderr)
	}
	if keys := testsupport.ListKeys(t, e.s3, bucket, "demo/dead-letter-archive/audit/"); len(keys) != 0 {
		t.Errorf("records left: %v", keys)
	}
}

// A local archive whose audit folder cannot be made (a file is named
// audit): recover refuses before it writes anything, in one line, exit 1;
// the archive and the database are as they were.
func TestRecoverRefusesWhenItsRecordCannotBeWritten(t *testing.T) {
	e := newRecoverEnv(t, gen.ReferenceSeed(), nil)
	dir := t.TempDir()
	store, err := archive.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := gen.Generate(gen.Options{Stack: "demo", Count: 8, Seed: 5, Start: time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)},
		func(o gen.Object) error { return store.Put(ctx, o.Key, o.Body) }); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "demo/dead-letter-archive/audit"), []byte("not a folder"), 0o644); err != nil {
		t.Fatal(err)
	}
	before, execs := treeOf(t, dir), executionCount(t, e.dbURL)
	r := runAt(t, auditNow, e.env, "", "recover", "--archive", filepath.Join(dir, "demo"), "--database-url", e.dbURL, "--yes", "--offline")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1: %s", r.code, r.stderr)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(r.stderr), "\n") {
		if strings.Contains(l, "audit record cannot be written") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 || !strings.Contains(lines[0], "nothing was changed") {
		t.Errorf("want one line saying the record cannot be written and nothing changed:\n%s", r.stderr)
	}
	if after := treeOf(t, dir); !mapsEqual(before, after) {
		t.Errorf("the archive changed: %d files before, %d after", len(before), len(after))
	}
	if n := executionCount(t, e.dbURL); n != execs {
		t.Errorf("%d executions in the database, %d before", n, execs)
	}
}

func executionCount(t *testing.T, dbURL string) int {
	t.Helper()
	return testsupport.QueryInt(t, dbURL, "SELECT count(*) FROM executions")
}

// treeOf is every file under dir with its bytes.
func treeOf(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		out[p] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Two recovers of one archive at once (into two databases, of two dates,
// at the same second by their clock) leave two records, neither
// overwriting the other, each with its own items.
func TestTwoConcurrentRecoversLeaveTwoRecords(t *testing.T) {
	e := newRecoverEnv(t, gen.ReferenceSeed(), nil)
	bucket := testsupport.NewBucket(t, e.s3)
	store := archive.NewS3(e.s3, bucket)
	ctx := context.Background()
	if err := gen.Generate(gen.Options{Stack: "demo", Count: 20, Seed: 21, Days: 2, Start: time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)},
		func(o gen.Object) error { return store.Put(ctx, o.Key, o.Body) }); err != nil {
		t.Fatal(err)
	}
	dbs := []string{e.dbURL, testsupport.NewCumulusDatabase(t, gen.ReferenceSeed())}
	var wg sync.WaitGroup
	codes := make([]runResult, 2)
	for i, date := range []string{"2024-03-01", "2024-03-02"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i] = runAt(t, auditNow, e.env, "", "recover", "--archive", "s3://"+bucket+"/demo", "--database-url", dbs[i],
				"--yes", "--offline", "--date", date, "-o", "ndjson")
		}()
	}
	wg.Wait()
	objects := 0
	for _, r := range codes {
		if r.code != 0 && r.code != 3 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		for _, o := range results(t, r.stdout) {
			if o["type"] == "object" {
				objects++
			}
		}
	}
	runs := auditRuns(t, store, "demo")
	if len(runs) != 2 || runs[0].RunID == runs[1].RunID || runs[0].Finished == nil || runs[1].Finished == nil {
		t.Fatalf("%d records: %+v", len(runs), runs)
	}
	if n := len(runs[0].Items) + len(runs[1].Items); n != objects {
		t.Errorf("%d items in the two records, %d objects reported", n, objects)
	}
	for _, run := range runs {
		date := run.Selection["date"]
		for _, it := range run.Items {
			if !strings.Contains(it.Key, fmt.Sprintf("/sqs/%v/", date)) {
				t.Errorf("run of %v holds an item of another date: %s", date, it.Key)
			}
		}
	}
}

// No secret reaches a record: a password in --database-url, the value of
// a --db-secret (its password), the content of --token-file.
func TestNoSecretReachesARecord(t *testing.T) {
	e := newRecoverEnv(t, gen.ReferenceSeed(), nil)
	bucket := generatedArchive(t, e, 6)
	u, _ := url.Parse(e.dbURL)
	pw := "hunter2-pw"
	u.User = url.UserPassword(u.User.Username(), pw)
	port := u.Port()
	secret := fmt.Sprintf(`{"host":%q,"port":%s,"username":%q,"password":%q,"database":%q}`, u.Hostname(), port, u.User.Username(), pw, strings.TrimPrefix(u.Path, "/"))
	sm := testsupport.NewSecretsFake(t, map[string]string{"cumulus-db-login": secret})
	t.Setenv("AWS_ENDPOINT_URL_SECRETS_MANAGER", sm.URL)
	r := runAt(t, auditNow, e.env, "", "recover", "--archive", "s3://"+bucket+"/demo", "--db-secret", "cumulus-db-login",
		"--yes", "--offline", "--date", "2024-03-01")
	if r.code != 0 && r.code != 3 {
		t.Fatalf("--db-secret: exit %d: %s", r.code, r.stderr)
	}
	runs := auditRuns(t, archive.NewS3(e.s3, bucket), "demo")
	if len(runs) != 1 || runs[0].Target.Database == nil || runs[0].Target.Database.Host != u.Hostname() || runs[0].Target.Database.Name != strings.TrimPrefix(u.Path, "/") {
		t.Fatalf("the record does not name the secret's database: %+v", runs)
	}
	// A password URL: the argv keeps the URL, without its password.
	bucket2 := generatedArchive(t, e, 6)
	r = runAt(t, auditNow, e.env, "", "recover", "--archive", "s3://"+bucket2+"/demo", "--database-url", u.String(), "--yes", "--offline")
	if r.code != 0 && r.code != 3 {
		t.Fatalf("--database-url: exit %d: %s", r.code, r.stderr)
	}
	for _, b := range []string{bucket, bucket2} {
		text := auditBytes(t, e, b)
		if text == "" {
			t.Fatalf("no record in %s", b)
		}
		for _, s := range []string{pw, secret, `"password"`} {
			if strings.Contains(text, s) {
				t.Errorf("the record in %s holds a secret (%.20s...)", b, s)
			}
		}
	}
	if !strings.Contains(auditBytes(t, e, bucket2), u.User.Username()+":"+audit.Redacted+"@") {
		t.Error("the argv's database URL is not kept with its password redacted")
	}
}

// The read verbs see nothing of the audit folder: search, stats and
// triage print the same with records in it as without.
func TestReadVerbsDoNotSeeTheAuditFolder(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Dir(sampleArchive))); err != nil {
		t.Fatal(err)
	}
	spec := filepath.Join(dir, "demo")
	verbs := [][]string{
		{"search", "--archive", spec, "-o", "ndjson"},
		{"search", "--archive", spec, "--failed", "-o", "keys"},
		{"search", "--archive", spec, "--include-legacy", "-o", "keys"},
		{"stats", "--archive", spec, "--by", "error", "--include-legacy"},
		{"triage", "--archive", spec, "-o", "json", "--include-legacy"},
	}
	before := make([]runResult, len(verbs))
	for i, v := range verbs {
		before[i] = run(t, false, nil, "", v...)
	}
	store, err := archive.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// Records as a recover leaves them, with items naming the archive's
	// own keys, and an item chunk that is JSON of another kind.
	rec, err := audit.Begin(ctx, store, dla.Layout{Stack: "demo"}.AuditPrefix(), audit.Started{Tool: "dla", Verb: "recover"}, audit.Options{ChunkLines: 1})
	if err != nil {
		t.Fatal(err)
	}
	rec.Add(audit.Item{Key: "demo/dead-letter-archive/sqs/2024-03-02/x", Result: "failed", Action: "moved", MovedTo: "demo/dead-letter-archive/failed-sqs/2024-03-02/x"})
	if err := rec.Finish(ctx, audit.Finished{Counts: map[string]int{"moved": 1}}); err != nil {
		t.Fatal(err)
	}
	for i, v := range verbs {
		after := run(t, false, nil, "", v...)
		if after.code != before[i].code || after.stdout != before[i].stdout || stripAudit(after.stderr) != stripAudit(before[i].stderr) {
			t.Errorf("%v: with records, exit %d:\n%s\n%s\nwithout: exit %d:\n%s\n%s", v, after.code, after.stdout, after.stderr,
				before[i].code, before[i].stdout, before[i].stderr)
		}
	}
}

var timingRE = regexp.MustCompile(`[0-9.]+ ?m?s\b`)

func stripAudit(s string) string { return timingRE.ReplaceAllString(s, "") }

// isAuditKey is a key (or path) of an audit record: the tests that compare
// an archive before and after a run leave the run's own record out.
func isAuditKey(k string) bool {
	return strings.Contains(filepath.ToSlash(k), "dead-letter-archive/audit/")
}

// recover --via-api leaves one record: the archive and the API as its
// target, each object staged (key → its staging key), each outcome
// Cumulus's operation reported (written and deleted, or failed and moved
// to its failed-sqs/ key), each object moved back (--cleanup), and the
// result's counts; the token of --token-file is nowhere in it.
func TestRecoverViaAPILeavesARecordOfEachStagedObjectAndItsOutcome(t *testing.T) {
	e := newViaAPIEnv(t)
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(testAPIToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := runViaAPI(t, context.Background(), "", "", "recover", "--archive", "s3://"+e.bucket+"/demo", "--via-api", e.api.URL,
		"--token-file", tokenFile, "--date", "2024-03-03", "--yes", "--cleanup", "--reason", "INC-9", "-o", "json")
	if r.code != 3 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var res apirecover.Result
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatal(err)
	}
	store := archive.NewS3(e.c, e.bucket)
	runs := auditRuns(t, store, "demo")
	if len(runs) != 1 || runs[0].Finished == nil {
		t.Fatalf("%d records: %+v", len(runs), runs)
	}
	run := runs[0]
	if run.Target.API != e.api.URL || run.Target.Archive != "s3://"+e.bucket+"/demo" || run.Reason != "INC-9" ||
		!strings.Contains(r.stderr, "audit: s3://"+e.bucket+"/"+run.Folder+"\n") {
		t.Errorf("started record %+v; plan:\n%s", run.Started, r.stderr)
	}
	c := run.Finished.Counts
	if c["staged"] != res.Staged || c["succeeded"] != res.Succeeded || c["failed"] != res.Failed || c["moved_back"] != res.MovedBack ||
		c["left_out"] != len(res.LeftOut) || run.Finished.ExitCode != 3 {
		t.Errorf("counts %v, exit %d; result %+v", c, run.Finished.ExitCode, res)
	}
	after := e.snapshot(t)
	by := map[string]int{}
	for _, it := range run.Items {
		by[it.Action]++
		switch it.Action {
		case "staged":
			if !strings.HasPrefix(it.MovedTo, res.Staging) || e.before[it.Key] == "" {
				t.Errorf("staged item %+v", it)
			}
		case "deleted by Cumulus":
			if _, still := after[it.Key]; still || e.before[it.Key] == "" {
				t.Errorf("written item %+v: still there", it)
			}
		case "moved by Cumulus":
			if it.MovedTo == "" || after[it.MovedTo] != e.before[it.Key] {
				t.Errorf("failed item %+v: not at its failed-sqs key", it)
			}
		case "moved back":
			if after[it.MovedTo] == "" {
				t.Errorf("moved back item %+v: not back", it)
			}
		case "left in staging":
		default:
			t.Errorf("item of an unknown action %+v", it)
		}
	}
	if by["staged"] != res.Staged || by["deleted by Cumulus"] != res.Succeeded || by["moved by Cumulus"] != res.Failed || by["moved back"] != res.MovedBack {
		t.Errorf("items by action %v, result %+v", by, res)
	}
	for _, k := range testsupport.ListKeys(t, e.c, e.bucket, "demo/dead-letter-archive/audit/") {
		if b, _ := store.Get(context.Background(), k); strings.Contains(string(b), testAPIToken) {
			t.Errorf("%s holds the token", k)
		}
	}
}

// migrate-legacy leaves one record: one item per legacy object (its key,
// its result, where it moved), the counts of the summary; a dry run none.
func TestMigrateLegacyLeavesARecordOfEachMove(t *testing.T) {
	e := newMigrateEnv(t)
	if r, _ := e.migrate(t, "--dry-run"); r.code != 3 {
		t.Fatalf("dry run: exit %d: %s", r.code, r.stderr)
	}
	if keys := testsupport.ListKeys(t, e.c, e.bucket, "demo/dead-letter-archive/audit/"); len(keys) != 0 {
		t.Fatalf("a dry run left a record: %v", keys)
	}
	r, results := e.migrate(t, "--yes", "--reason", "move the old ones")
	if r.code != 3 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	runs := auditRuns(t, archive.NewS3(e.c, e.bucket), "demo")
	if len(runs) != 1 || runs[0].Finished == nil || runs[0].Verb != "migrate-legacy" || runs[0].Reason != "move the old ones" {
		t.Fatalf("records %+v", runs)
	}
	run := runs[0]
	if !strings.Contains(r.stderr, "audit: s3://"+e.bucket+"/"+run.Folder+"\n") {
		t.Errorf("the plan does not name the record:\n%s", r.stderr)
	}
	want := map[string]MigrateResult{}
	for _, m := range results {
		want[m.Key] = m
	}
	if len(run.Items) != len(results) || run.Plan["objects"] != len(e.legacy) {
		t.Fatalf("%d items, %d results, plan %v", len(run.Items), len(results), run.Plan)
	}
	moved := 0
	for _, it := range run.Items {
		m, ok := want[it.Key]
		switch {
		case !ok || m.Result != it.Result:
			t.Errorf("item %+v, result %+v", it, m)
		case it.Result == "moved":
			moved++
			if m.Target == nil || *m.Target != it.MovedTo || it.Action != "moved" {
				t.Errorf("item %+v, result %+v", it, m)
			}
		case it.Action != "left":
			t.Errorf("item %+v", it)
		}
	}
	if run.Finished.Counts["moved"] != moved || run.Finished.Counts["unreadable"] != 1 || run.Finished.ExitCode != 3 {
		t.Errorf("counts %v, exit %d", run.Finished.Counts, run.Finished.ExitCode)
	}
}

// seedWithoutFirstCollection is the reference seed less its first
// collection: the messages of that collection fail to write.
func seedWithoutFirstCollection(t *testing.T) []byte {
	t.Helper()
	var seed map[string][]map[string]any
	if err := json.Unmarshal(gen.ReferenceSeed(), &seed); err != nil {
		t.Fatal(err)
	}
	seed["collections"] = seed["collections"][1:]
	b, _ := json.Marshal(seed)
	return b
}

// An object recover moved to failed-sqs/ and then retried (--failed)
// twice was tried by three runs: triage --failed says so of its group,
// trace of its granule says so of the message and lists each run with
// its actor, time, reason and outcome. Without an audit folder neither
// says anything more; with one that cannot be read, one line says so and
// the command goes on.
func TestTriageAndTraceSayHowOftenRecoverTriedAFailedObject(t *testing.T) {
	e := newRecoverEnv(t, seedWithoutFirstCollection(t), nil)
	dir := t.TempDir()
	store, err := archive.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := gen.Generate(gen.Options{Stack: "demo", Count: 30, Seed: 21, Days: 1, Malformed: -1, Start: time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)},
		func(o gen.Object) error { return store.Put(ctx, o.Key, o.Body) }); err != nil {
		t.Fatal(err)
	}
	spec := filepath.Join(dir, "demo")
	triageArgs := []string{"triage", "--archive", spec, "--failed"}
	base := []string{"recover", "--archive", spec, "--database-url", e.dbURL, "--yes", "--offline", "-o", "ndjson"}
	r := runAt(t, auditNow, e.env, "", append(base, "--reason", "INC-1")...)
	if r.code != 3 {
		t.Fatalf("first run: exit %d: %s", r.code, r.stderr)
	}
	var failedKey, granule string
	for _, o := range results(t, r.stdout) {
		if o["type"] != "object" || o["result"] != "failed" || granule != "" {
			continue
		}
		body, err := store.Get(ctx, o["moved_to"].(string))
		if err != nil {
			t.Fatal(err)
		}
		if d, err := dla.Decode(body); err == nil && len(d.Granules) > 0 && d.Granules[0] != "" {
			failedKey, granule = o["moved_to"].(string), d.Granules[0]
		}
	}
	if failedKey == "" {
		t.Fatal("no failure names a granule")
	}
	// The item names the granule, though its write never got to it.
	if runs := auditRuns(t, store, "demo"); len(runs) != 1 || !slices.ContainsFunc(runs[0].Items, func(it audit.Item) bool {
		return it.MovedTo == failedKey && slices.Contains(it.Granules, granule)
	}) {
		t.Fatalf("no item of %s names its granule %s", failedKey, granule)
	}
	for range 2 {
		if r := runAt(t, auditNow, e.env, "", append(base, "--failed")...); r.code != 3 {
			t.Fatalf("retry: exit %d: %s", r.code, r.stderr)
		}
	}
	tr := run(t, false, nil, "", triageArgs...)
	if !strings.Contains(tr.stdout, "tried 3 times by recover") {
		t.Errorf("triage --failed does not say the objects were tried 3 times:\n%s%s", tr.stdout, tr.stderr)
	}
	trace := runAt(t, auditNow, e.env, "", "trace", "--archive", spec, "--database-url", e.dbURL, "--offline", "--granule", granule)
	if !strings.Contains(trace.stdout, "tried 3 times by recover") ||
		!strings.Contains(trace.stdout, "history: recovered by ") || !strings.Contains(trace.stdout, "at 2024-03-20T12:00:00Z (INC-1): failed, moved") ||
		strings.Count(trace.stdout, "history: recovered by ") != 3 {
		t.Errorf("trace does not show the record's history:\n%s%s", trace.stdout, trace.stderr)
	}
	var js TraceReport
	jr := runAt(t, auditNow, e.env, "", "trace", "--archive", spec, "--database-url", e.dbURL, "--offline", "--granule", granule, "-o", "json")
	if err := json.Unmarshal([]byte(jr.stdout), &js); err != nil || len(js.Records) != 1 || js.Records[0].TriedByRecover[failedKey] != 3 || len(js.Records[0].History) != 3 {
		t.Errorf("trace -o json: %v %+v", err, js.Records)
	}

	// No audit folder: nothing more said.
	if err := os.RemoveAll(filepath.Join(dir, "demo/dead-letter-archive/audit")); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{triageArgs, {"trace", "--archive", spec, "--database-url", e.dbURL, "--offline", "--granule", granule}} {
		r := runAt(t, auditNow, e.env, "", args...)
		if strings.Contains(r.stdout+r.stderr, "by recover") || strings.Contains(r.stdout+r.stderr, "history:") || strings.Contains(r.stderr, "audit") {
			t.Errorf("%s without records says more:\n%s%s", args[0], r.stdout, r.stderr)
		}
	}
	// An audit that cannot be read (a record whose started.json is no
	// file): one line, and the command goes on.
	bad := filepath.Join(dir, "demo/dead-letter-archive/audit/2024-03-20/20240320T120000Z-0badf00d/started.json")
	if err := os.MkdirAll(bad, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bad, "x"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{triageArgs, {"trace", "--archive", spec, "--database-url", e.dbURL, "--offline", "--granule", granule}} {
		r := runAt(t, auditNow, e.env, "", args...)
		if n := strings.Count(r.stderr, "could not be read"); n != 1 || r.stdout == "" || r.code != 0 {
			t.Errorf("%s with an unreadable audit: exit %d, %d lines saying so:\n%s%s", args[0], r.code, n, r.stdout, r.stderr)
		}
	}
}

// In S3, a bucket that refuses the audit record's put (AccessDenied for
// it alone, as a policy denying the audit/ prefix would): recover, its
// --via-api form and migrate-legacy each refuse before anything moves, in
// one line naming the record's place and the permission, exit 4 (as
// every permission error); the bucket is as it was.
func TestEveryVerbRefusesWhenS3DeniesItsRecord(t *testing.T) {
	denied := func(p *testsupport.Proxy) {
		p.SetHook(func(op string, body []byte) ([]byte, *testsupport.Reply) {
			if op == "PutObject" && strings.Contains(string(body), audit.Schema) {
				return nil, &testsupport.Reply{Status: 403, Body: "<Error><Code>AccessDenied</Code><Message>denied by the bucket policy</Message></Error>"}
			}
			return nil, nil
		})
	}
	check := func(t *testing.T, r runResult, before, after map[string]string) {
		t.Helper()
		lines := 0
		for _, l := range strings.Split(r.stderr, "\n") {
			if strings.Contains(l, "audit record cannot be written") && strings.Contains(l, "AccessDenied") && strings.Contains(l, "/dead-letter-archive/audit/") {
				lines++
			}
		}
		if r.code != cmdutil.ExitAuth || lines != 1 {
			t.Errorf("exit %d, %d lines naming the refused record:\n%s", r.code, lines, r.stderr)
		}
		if !mapsEqual(before, after) {
			t.Errorf("the bucket changed: %d objects before, %d after", len(before), len(after))
		}
	}
	t.Run("recover", func(t *testing.T) {
		e, bucket, proxy := faultArchive(t)
		denied(proxy)
		v := &viaAPIEnv{c: e.s3, bucket: bucket}
		before, execs := v.snapshot(t), executionCount(t, e.dbURL)
		r := runAt(t, auditNow, e.env, "", "recover", "--archive", "s3://"+bucket+"/demo", "--database-url", e.dbURL, "--yes", "--offline")
		check(t, r, before, v.snapshot(t))
		if n := executionCount(t, e.dbURL); n != execs {
			t.Errorf("%d executions in the database, %d before", n, execs)
		}
	})
	t.Run("via-api", func(t *testing.T) {
		e := newViaAPIEnv(t)
		denied(proxyS3(t))
		r := e.recover(t, testAPIToken, "--date", "2024-03-03", "--yes")
		check(t, r, e.before, e.snapshot(t))
		if len(e.api.Posts()) != 0 {
			t.Error("Cumulus was asked to recover")
		}
	})
	t.Run("migrate-legacy", func(t *testing.T) {
		e := newMigrateEnv(t)
		denied(e.proxy)
		v := &viaAPIEnv{c: e.c, bucket: e.bucket}
		before := v.snapshot(t)
		r, _ := e.migrate(t, "--yes")
		after := v.snapshot(t)
		for k := range after { // the lock object comes and goes
			if strings.Contains(k, "/locks/") {
				delete(after, k)
			}
		}
		check(t, r, before, after)
	})
}
