package dlacmd

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/deadletter/deadletter/internal/cli/cmdutil"
	"github.com/deadletter/deadletter/internal/cli/iostreams"
	"github.com/deadletter/deadletter/internal/testsupport"
	"github.com/deadletter/deadletter/internal/testsupport/fakeathena"
)

// athenaEnv is the sample archive in versitygw and a fake Athena, both
// reached through the SDK's per-service endpoint variables.
type athenaEnv struct {
	bucket string
	fake   *fakeathena.Server
	plan   func(sql string) fakeathena.Execution
}

func newAthenaEnv(t *testing.T) *athenaEnv {
	t.Helper()
	c := testsupport.S3Client(t)
	e := &athenaEnv{bucket: testsupport.NewBucket(t, c)}
	testsupport.UploadTree(t, c, e.bucket, sampleArchive, "demo/")
	e.fake = fakeathena.New(t, func(sql string) fakeathena.Execution { return e.plan(sql) })
	testsupport.SetAWSEnv(t, map[string]string{"AWS_ENDPOINT_URL_S3": testsupport.S3Endpoint(t), "AWS_ENDPOINT_URL_ATHENA": e.fake.URL})
	return e
}

// rows answers a query with these keys as "$path" values.
func (e *athenaEnv) rows(keys []string) fakeathena.Execution {
	ex := fakeathena.Execution{States: []string{"QUEUED", "RUNNING", "SUCCEEDED"}, Scanned: []int64{0, 3 << 20, 7 << 20}, Columns: []string{"path", "eventdate"}}
	for _, k := range keys {
		ex.Rows = append(ex.Rows, []*string{aws.String("s3://" + e.bucket + "/" + k), aws.String(strings.Split(k, "/")[3])})
	}
	return ex
}

// The keys Athena returns are fetched and decoded as local search does:
// for the same objects, every output format prints the same bytes.
func TestAthenaSearchPrintsWhatLocalSearchPrints(t *testing.T) {
	e := newAthenaEnv(t)
	archiveURL := "s3://" + e.bucket + "/demo"
	local := run(t, false, nil, "", "search", "--archive", archiveURL, "--from", "2024-03-01", "--to", "2024-03-05", "--status", "FAILED", "-o", "keys", "--ignore-unreadable")
	if local.code != 0 {
		t.Fatalf("local search: %d %s", local.code, local.stderr)
	}
	keys := strings.Fields(local.stdout)
	if len(keys) < 3 {
		t.Fatalf("the sample archive has %d FAILED objects; the test needs several", len(keys))
	}
	e.fake.PageSize = 2 // several pages
	e.plan = func(string) fakeathena.Execution { return e.rows(keys) }
	for _, format := range []string{"keys", "json", "ndjson", "table"} {
		args := []string{"search", "--archive", archiveURL, "--from", "2024-03-01", "--to", "2024-03-05", "--status", "FAILED", "-o", format, "--ignore-unreadable"}
		want := run(t, false, nil, "", args...)
		got := run(t, false, nil, "", append(args, "--engine", "athena")...)
		if got.code != 0 || got.stdout != want.stdout {
			t.Fatalf("-o %s: exit %d, stderr %s\nathena:\n%s\nlocal:\n%s", format, got.code, got.stderr, got.stdout, want.stdout)
		}
		if !strings.Contains(got.stderr, "Athena query q-") || !strings.Contains(got.stderr, "7.0 MiB scanned") {
			t.Errorf("-o %s: no Athena summary on stderr:\n%s", format, got.stderr)
		}
	}
	started := e.fake.Started()
	if len(started) != 4 {
		t.Fatalf("%d queries started, want 4", len(started))
	}
	s := started[0]
	if s.Workgroup != "demo_athena_workgroup" || s.Database != "demo_glue_database" ||
		!strings.Contains(s.SQL, `FROM "demo_glue_database"."demo_dla_glue_table"`) ||
		!strings.Contains(s.SQL, "eventdate BETWEEN '2024-03-01' AND '2024-03-05'") || !strings.Contains(s.SQL, "upper(status) = 'FAILED'") {
		t.Errorf("query started: %+v", s)
	}
}

// Athena's row is checked again locally: an object that does not match the
// filters (a hoisted column that disagrees with its body, say) is not
// printed, and a path outside the archive's bucket is an error.
func TestAthenaRowsAreVerified(t *testing.T) {
	e := newAthenaEnv(t)
	archiveURL := "s3://" + e.bucket + "/demo"
	all := run(t, false, nil, "", "search", "--archive", archiveURL, "--date", "2024-03-02", "-o", "keys", "--ignore-unreadable")
	failed := run(t, false, nil, "", "search", "--archive", archiveURL, "--date", "2024-03-02", "--status", "FAILED", "-o", "keys", "--ignore-unreadable")
	if all.code != 0 || failed.code != 0 || len(strings.Fields(all.stdout)) <= len(strings.Fields(failed.stdout)) {
		t.Fatalf("setup: %s %s", all.stderr, failed.stderr)
	}
	e.plan = func(string) fakeathena.Execution { return e.rows(strings.Fields(all.stdout)) }
	got := run(t, false, nil, "", "search", "--archive", archiveURL, "--date", "2024-03-02", "--status", "FAILED", "-o", "keys", "--engine", "athena")
	if got.code != 0 || got.stdout != failed.stdout {
		t.Fatalf("exit %d; printed\n%s\nwant only the FAILED objects\n%s", got.code, got.stdout, failed.stdout)
	}
	e.plan = func(string) fakeathena.Execution {
		ex := e.rows(nil)
		ex.Rows = [][]*string{{aws.String("s3://another-bucket/demo/dead-letter-archive/sqs/2024-03-02/x.json"), aws.String("2024-03-02")}}
		return ex
	}
	got = run(t, false, nil, "", "search", "--archive", archiveURL, "--date", "2024-03-02", "--engine", "athena")
	if got.code != cmdutil.ExitFailure || !strings.Contains(got.stderr, "another-bucket") {
		t.Fatalf("a row from another bucket: exit %d, %s", got.code, got.stderr)
	}
}

func TestAthenaFailedQueryExits1WithTheReason(t *testing.T) {
	e := newAthenaEnv(t)
	e.plan = func(string) fakeathena.Execution {
		return fakeathena.Execution{States: []string{"RUNNING", "FAILED"}, Reason: "HIVE_BAD_DATA: Error parsing field value"}
	}
	for _, verb := range []string{"search", "stats"} {
		r := run(t, false, nil, "", verb, "--archive", "s3://"+e.bucket+"/demo", "--date", "2024-03-02", "--engine", "athena")
		if r.code != cmdutil.ExitFailure || !strings.Contains(r.stderr, "FAILED: HIVE_BAD_DATA: Error parsing field value") {
			t.Errorf("%s: exit %d, stderr %s", verb, r.code, r.stderr)
		}
	}
}

// Ctrl-C while the query runs stops it and exits 130.
func TestAthenaInterruptStopsTheQuery(t *testing.T) {
	e := newAthenaEnv(t)
	e.plan = func(string) fakeathena.Execution { return fakeathena.Execution{States: []string{"RUNNING"}} }
	ctx, cancel := context.WithCancel(context.Background())
	ios, _, _, errOut := iostreams.Test()
	f := NewFactory(ios, func(string) string { return "" })
	go func() {
		for e.fake.Calls("GetQueryExecution") < 2 {
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
	}()
	code := Run(ctx, f, []string{"search", "--archive", "s3://" + e.bucket + "/demo", "--date", "2024-03-02", "--engine", "athena"})
	if code != cmdutil.ExitInterrupted {
		t.Fatalf("exit %d, want 130: %s", code, errOut)
	}
	if s := e.fake.Stopped(); len(s) != 1 || s[0] != e.fake.Started()[0].ID {
		t.Fatalf("stopped %v", s)
	}
}

// stats counts with one GROUP BY query and fetches nothing; error texts
// are folded into the classes local stats shows.
func TestAthenaStats(t *testing.T) {
	e := newAthenaEnv(t)
	e.plan = func(sql string) fakeathena.Execution {
		if !strings.Contains(sql, "GROUP BY error") {
			t.Errorf("query: %s", sql)
		}
		return fakeathena.Execution{Columns: []string{"value", "objects"}, Scanned: []int64{12 << 20}, Rows: [][]*string{
			{aws.String(`RecordDoesNotExist: Record in providers with identifiers {"name":"LANCE_NRT"} does not exist.`), aws.String("3")},
			{aws.String(`RecordDoesNotExist: Record in providers with identifiers {"name":"MODAPS"} does not exist.`), aws.String("4")},
			{nil, aws.String("5")},
		}}
	}
	r := run(t, false, nil, "", "stats", "--archive", "s3://"+e.bucket+"/demo", "--from", "2024-03-01", "--to", "2024-03-05", "--by", "error", "-o", "json", "--engine", "athena")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var rep StatsReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Total != 12 || len(rep.Groups) != 2 || rep.Groups[0].Count != 7 || rep.Groups[1].Value != nil || rep.Groups[1].Count != 5 {
		t.Fatalf("report %+v", rep)
	}
	if !strings.Contains(r.stderr, "12.0 MiB scanned") {
		t.Errorf("stderr: %s", r.stderr)
	}
}

func TestAthenaPrintSQLAndRefusals(t *testing.T) {
	r := run(t, false, nil, "", "search", "--archive", "s3://b/my-stack", "--granule", "G'1", "--engine", "athena", "--print-sql",
		"--athena-workgroup", "primary")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	// run's clock is 2024-03-03: the default window is the 7 days to it.
	for _, want := range []string{"-- workgroup primary", `"my_stack_glue_database"."my_stack_dla_glue_table"`,
		"eventdate BETWEEN '2024-02-26' AND '2024-03-03'", "contains(granules, 'G''1')"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("--print-sql lacks %q:\n%s", want, r.stdout)
		}
	}
	if !strings.Contains(r.stderr, "the last 7 days") {
		t.Errorf("the default window is not said: %s", r.stderr)
	}
	for name, args := range map[string][]string{
		"local archive":  {"search", "--archive", sampleArchive},
		"failed-sqs":     {"search", "--archive", "s3://b/s", "--failed"},
		"legacy":         {"search", "--archive", "s3://b/s", "--include-legacy"},
		"NUL":            {"search", "--archive", "s3://b/s", "--granule", "a\x00b"},
		"bad size":       {"search", "--archive", "s3://b/s", "--max-scan-bytes", "lots"},
		"generation":     {"stats", "--archive", "s3://b/s", "--by", "generation"},
		"bad engine":     {"search", "--archive", "s3://b/s", "--engine", "spark"},
		"sql with local": {"search", "--archive", sampleArchive, "--print-sql", "--engine", "local"},
	} {
		if name != "bad engine" && name != "sql with local" {
			args = append(args, "--engine", "athena", "--print-sql")
		}
		if r := run(t, false, nil, "", args...); r.code != cmdutil.ExitUsage {
			t.Errorf("%s: exit %d, want usage: %s", name, r.code, r.stderr)
		}
	}
}

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{"1000": 1000, "10GB": 10e9, "1.5 TB": 1.5e12, "512MiB": 512 << 20} {
		if got, err := parseBytes(in); err != nil || got != want {
			t.Errorf("parseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1", "0", "GB", "1e30"} {
		if _, err := parseBytes(in); err == nil {
			t.Errorf("parseBytes(%q) accepted", in)
		}
	}
}
