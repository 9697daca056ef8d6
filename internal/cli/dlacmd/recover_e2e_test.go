package dlacmd

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/cumulusdb"
	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/dla/gen"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// TestRecoverGeneratedArchive recovers a generated archive (every
// generation, 1 to 3 layers, string and object detail, every status, a few
// malformed objects) from versitygw with the Step Functions fake (which
// knows none of the executions, as when their history expired), then checks
// the database rows and the archive: written objects are gone and their
// execution and granules are in the database, and everything else is under
// failed-sqs/<date>/ with nothing left in sqs/.
func TestRecoverGeneratedArchive(t *testing.T) {
	e := newRecoverEnv(t, gen.ReferenceSeed(), nil)
	bucket := testsupport.NewBucket(t, e.s3)
	store := archive.NewS3(e.s3, bucket)
	ctx := context.Background()
	generated := map[string]gen.Object{}
	err := gen.Generate(gen.Options{Stack: "demo", Count: 120, Seed: 9, Days: 3, Start: time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)},
		func(o gen.Object) error {
			generated[o.Key] = o
			return store.Put(ctx, o.Key, o.Body)
		})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2024, 3, 20, 12, 0, 0, 0, time.UTC)
	r := runAt(t, func() time.Time { return now }, e.env, "", "recover", "--archive", "s3://"+bucket+"/demo", "--include-legacy",
		"--database-url", e.dbURL, "--yes", "--concurrency", "4", "-o", "ndjson")
	if r.code != 3 { // the malformed objects are failures
		t.Fatalf("exit %d, want 3: %s", r.code, r.stderr)
	}
	conn, err := pgx.Connect(ctx, e.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	left := testsupport.KeySet(t, e.s3, bucket, "demo/dead-letter-archive/")
	layout := dla.Layout{Stack: "demo"}
	counts := map[string]int{}
	for _, o := range results(t, r.stdout) {
		if o["type"] != "object" {
			continue
		}
		key, _ := o["key"].(string)
		g, ok := generated[key]
		if !ok {
			t.Fatalf("result for an object that was not generated: %v", o)
		}
		delete(generated, key)
		counts[o["result"].(string)]++
		switch o["result"] {
		case "written":
			if strings.HasPrefix(g.Kind, "malformed") {
				t.Errorf("%s (%s) was written", key, g.Kind)
			}
			if left[key] || o["action"] != "deleted" {
				t.Errorf("%s written, action %v, still present %v", key, o["action"], left[key])
			}
			var n int
			if err := conn.QueryRow(ctx, `SELECT count(*) FROM executions WHERE arn = $1`, o["execution_arn"]).Scan(&n); err != nil || n != 1 {
				t.Errorf("%s written, but its execution %v is not in the database (%v)", key, o["execution_arn"], err)
			}
			if err := conn.QueryRow(ctx, `SELECT count(*) FROM granules WHERE granule_id = ANY($1)`, g.Granules).Scan(&n); err != nil || n != len(g.Granules) {
				t.Errorf("%s written, %d of its %d granules in the database (%v)", key, n, len(g.Granules), err)
			}
		case "failed", "unreadable":
			// An object that is not JSON is unreadable; one whose outer
			// record parses but whose body does not is a failed message.
			if o["result"] == "unreadable" && !strings.HasPrefix(g.Kind, "malformed") {
				t.Errorf("%s (%s): %v: %v", key, g.Kind, o["result"], o["error"])
			}
			dst, _ := o["moved_to"].(string)
			info := layout.ParseKey(dst)
			if o["action"] != "moved" || !left[dst] || left[key] || info.Area != dla.AreaFailed || info.Date == "" || path.Base(dst) != path.Base(key) {
				t.Errorf("%s %v: action %v to %q (present %v), original present %v", key, o["result"], o["action"], dst, left[dst], left[key])
			}
		default:
			t.Errorf("%s: unexpected result %v", key, o)
		}
	}
	if len(generated) != 0 {
		t.Errorf("%d generated objects have no result", len(generated))
	}
	if sqsLeft := testsupport.ListKeys(t, e.s3, bucket, layout.AreaPrefix(dla.AreaSQS)); len(sqsLeft) != 0 {
		t.Errorf("still in sqs/: %v", sqsLeft)
	}
	if counts["written"] < 100 || counts["unreadable"] == 0 {
		t.Errorf("results %v: want most written and the malformed unreadable", counts)
	}
	t.Logf("results %v", counts)
}

// TestRecoverNeverShowsThePassword connects with a password in the URL, in
// DATABASE_URL and in a Secrets Manager secret, successfully and not, and
// requires that neither stream ever contains it.
func TestRecoverNeverShowsThePassword(t *testing.T) {
	e := newRecoverEnv(t, gen.ReferenceSeed(), nil)
	const password = "Pa55-w0rd-7c1e9a"
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, testsupport.DatabaseURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	role := "dl_user_" + strings.ToLower(testsupport.RandomHex(4))
	u, _ := url.Parse(e.dbURL)
	db := strings.TrimPrefix(u.Path, "/")
	for _, q := range []string{
		fmt.Sprintf("CREATE ROLE %s LOGIN PASSWORD '%s'", role, password),
		fmt.Sprintf("GRANT ALL ON DATABASE %s TO %s", db, role),
	} {
		if _, err := admin.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), testsupport.DatabaseURL(t))
		if err == nil {
			// The role holds privileges in the test database: drop it first.
			_, _ = c.Exec(context.Background(), "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)")
			_, _ = c.Exec(context.Background(), "DROP OWNED BY "+role)
			_, _ = c.Exec(context.Background(), "DROP ROLE IF EXISTS "+role)
			c.Close(context.Background())
		}
	})
	conn, err := pgx.Connect(ctx, e.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "GRANT ALL ON ALL TABLES IN SCHEMA public TO "+role+"; GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO "+role); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)

	withPassword := func(host, database string) string {
		v := *u
		v.User = url.UserPassword(role, password)
		v.Host, v.Path = host, "/"+database
		return v.String()
	}
	good := withPassword(u.Host, db)
	closed := withPassword("127.0.0.1:1", db) // nothing listens on port 1
	secret := func(port, database string) string {
		return fmt.Sprintf(`{"host":%q,"port":%s,"username":%q,"password":%q,"database":%q,"engine":"postgres"}`,
			u.Hostname(), port, role, password, database)
	}
	sm := testsupport.NewSecretsFake(t, map[string]string{
		"good":      secret(u.Port(), db),
		"closed":    secret("1", db),
		"nodb":      secret(u.Port(), "no_such_db"),
		"malformed": `{"host":"x","password":"` + password + `",`,
	})
	t.Setenv("AWS_ENDPOINT_URL_SECRETS_MANAGER", sm.URL)

	archiveDir := t.TempDir()
	store, err := archive.NewLocal(archiveDir)
	if err != nil {
		t.Fatal(err)
	}
	put := func() {
		if err := gen.Generate(gen.Options{Stack: "demo", Count: 6, Seed: 5, Malformed: -1}, func(o gen.Object) error {
			return store.Put(ctx, o.Key, o.Body)
		}); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name string
		env  map[string]string
		args []string
		code int
	}{
		{"url", nil, []string{"--database-url", good}, 0},
		{"url dry run", nil, []string{"--database-url", good, "--dry-run"}, 0},
		{"DATABASE_URL", map[string]string{"DATABASE_URL": good}, nil, 0},
		{"secret", nil, []string{"--db-secret", "good"}, 0},
		{"url unreachable", nil, []string{"--database-url", closed}, 1},
		{"url unparsable", nil, []string{"--database-url", strings.Replace(good, u.Host, u.Hostname()+":notaport", 1)}, 2},
		{"url no database", nil, []string{"--database-url", withPassword(u.Host, "no_such_db")}, 1},
		{"secret unreachable", nil, []string{"--db-secret", "closed"}, 1},
		{"secret no database", nil, []string{"--db-secret", "nodb"}, 1},
		{"secret malformed", nil, []string{"--db-secret", "malformed"}, 1},
		{"secret missing", nil, []string{"--db-secret", "absent"}, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			put()
			env := map[string]string{"DEADLETTER_NO_PROMPT": "1"}
			for k, v := range c.env {
				env[k] = v
			}
			args := append([]string{"recover", "--archive", archiveDir + "/demo", "--include-legacy", "--offline", "--yes", "-o", "ndjson"}, c.args...)
			r := runAt(t, time.Now, env, "", args...)
			if r.code != c.code {
				t.Errorf("exit %d, want %d: %s", r.code, c.code, r.stderr)
			}
			if strings.Contains(r.stdout+r.stderr, password) {
				t.Errorf("the password appears in the output:\nstdout: %s\nstderr: %s", r.stdout, r.stderr)
			}
			if c.code == 0 && !strings.Contains(r.stderr, role+"@") {
				t.Errorf("the plan does not name the database user and host: %s", r.stderr)
			}
		})
	}
	if sm.Calls() < 5 {
		t.Errorf("%d Secrets Manager calls, want one per --db-secret case", sm.Calls())
	}
}

// TestRecoverRetryFailed moves the messages of a collection the database
// lacks to failed-sqs/, adds the collection, and retries with --failed:
// those are written and leave failed-sqs/; the ones that still fail stay
// where they are (never copied onto themselves, never deleted).
func TestRecoverRetryFailed(t *testing.T) {
	var seed map[string][]map[string]any
	if err := json.Unmarshal(gen.ReferenceSeed(), &seed); err != nil {
		t.Fatal(err)
	}
	missing := seed["collections"][0]
	seed["collections"] = seed["collections"][1:]
	b, _ := json.Marshal(seed)
	e := newRecoverEnv(t, b, nil)
	bucket := testsupport.NewBucket(t, e.s3)
	store := archive.NewS3(e.s3, bucket)
	ctx := context.Background()
	err := gen.Generate(gen.Options{Stack: "demo", Count: 60, Seed: 21, Days: 2, Start: time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)},
		func(o gen.Object) error { return store.Put(ctx, o.Key, o.Body) })
	if err != nil {
		t.Fatal(err)
	}
	now := func() time.Time { return time.Date(2024, 3, 20, 12, 0, 0, 0, time.UTC) }
	args := []string{"recover", "--archive", "s3://" + bucket + "/demo", "--include-legacy", "--database-url", e.dbURL,
		"--yes", "--offline", "-o", "ndjson"}
	if r := runAt(t, now, e.env, "", args...); r.code != 3 {
		t.Fatalf("first run: exit %d, want 3: %s", r.code, r.stderr)
	}
	layout := dla.Layout{Stack: "demo"}
	failedBefore := testsupport.ListKeys(t, e.s3, bucket, layout.AreaPrefix(dla.AreaFailed))
	collection := fmt.Sprintf("%s___%s", missing["name"], missing["version"])

	conn, err := pgx.Connect(ctx, e.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// Through the seed, which fills what each schema generation needs.
	add, err := cumulusdb.ParseSeed(fmt.Appendf(nil, `{"collections":[{"name":%q,"version":%q}]}`, missing["name"], missing["version"]))
	if err != nil {
		t.Fatal(err)
	}
	if err := cumulusdb.ApplySeed(ctx, conn, add, ""); err != nil {
		t.Fatal(err)
	}
	r := runAt(t, now, e.env, "", append(args, "--failed")...)
	if r.code != 3 { // the malformed objects fail again
		t.Fatalf("retry: exit %d, want 3: %s", r.code, r.stderr)
	}
	failedAfter := testsupport.KeySet(t, e.s3, bucket, layout.AreaPrefix(dla.AreaFailed))
	written, stayed := 0, 0
	for _, o := range results(t, r.stdout) {
		if o["type"] != "object" {
			continue
		}
		key := o["key"].(string)
		switch o["result"] {
		case "written", "dropped":
			written++
			if failedAfter[key] {
				t.Errorf("%s written on retry but still in failed-sqs/", key)
			}
		default:
			stayed++
			if o["action"] != "left" || !failedAfter[key] {
				t.Errorf("%s failed again: action %v, present %v (want left in place)", key, o["action"], failedAfter[key])
			}
		}
	}
	if written == 0 || stayed == 0 || written+stayed != len(failedBefore) || len(failedAfter) != stayed {
		t.Fatalf("retry of %d failed objects: %d written, %d stayed, %d left in failed-sqs/", len(failedBefore), written, stayed, len(failedAfter))
	}
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM executions e JOIN collections c ON c.cumulus_id = e.collection_cumulus_id
  WHERE c.name || '___' || c.version = $1`, collection).Scan(&n); err != nil || n == 0 {
		t.Errorf("no executions of %s after the retry (%v)", collection, err)
	}
	t.Logf("retry: %d of %d failed objects written (collection %s added), %d stayed in place", written, len(failedBefore), collection, stayed)
}

// Piped, recover's plan and summary keep each part on one line as they
// always did (a script may read them); only a terminal folds them, to
// stderr's own width.
func TestRecoverSummaryIsFoldedOnlyOnATerminal(t *testing.T) {
	archiveDir := localGeneratedArchive(t, 40)
	url := testsupport.NewCumulusDatabase(t, gen.ReferenceSeed())
	r := runAt(t, time.Now, map[string]string{"DEADLETTER_NO_PROMPT": "1"}, "", "recover", "--archive", archiveDir,
		"--database-url", url, "--offline", "--yes", "--dry-run")
	for _, want := range []string{"0 failed, 0 unreadable, 0 left in place, 0 not processed\n", "granules "} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("piped stderr lacks %q on one line:\n%s", want, r.stderr)
		}
	}
	for _, l := range strings.Split(r.stderr, "\n") {
		if strings.HasPrefix(l, "      ") && strings.Contains(l, ",") {
			t.Errorf("piped stderr folded a line: %q\n%s", l, r.stderr)
		}
	}
}
