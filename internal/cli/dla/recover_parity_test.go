package dla

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/jackc/pgx/v5"

	"github.com/deadletter/deadletter/internal/testsupport"
)

const seed3 = "../../../testdata/cumulus-v21-seed3"

// recoverEnv is a database, an S3 server and a Step Functions fake, with
// the process environment pointing the CLI's AWS clients at them.
type recoverEnv struct {
	dbURL string
	s3    *s3.Client
	sfn   *testsupport.SFNFake
	env   map[string]string
}

func newRecoverEnv(t testing.TB, seed []byte, executions map[string]testsupport.SFNExecution) *recoverEnv {
	t.Helper()
	e := &recoverEnv{dbURL: testsupport.NewCumulusDatabase(t, seed), s3: testsupport.S3Client(t)}
	e.sfn = testsupport.NewSFNFake(t, executions)
	for k, v := range map[string]string{
		"AWS_ENDPOINT_URL_S3": testsupport.S3Endpoint(t), "AWS_ENDPOINT_URL_SFN": e.sfn.URL,
		"AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": testsupport.AccessKey, "AWS_SECRET_ACCESS_KEY": testsupport.SecretKey,
		"AWS_EC2_METADATA_DISABLED": "true", "AWS_PROFILE": "", "AWS_CONFIG_FILE": os.DevNull, "AWS_SHARED_CREDENTIALS_FILE": os.DevNull,
	} {
		t.Setenv(k, v)
	}
	e.env = map[string]string{"DEADLETTER_NO_PROMPT": "1"}
	return e
}

// seed3Seed is the seed3 fixture's reference rows.
func seed3Seed(t testing.TB) []byte {
	b, err := os.ReadFile(seed3 + "/archive/_fixtures/seed.json")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// ensureBucket creates a fixed-name bucket, emptied and removed afterwards.
func ensureBucket(t *testing.T, c *s3.Client, name string) {
	t.Helper()
	ctx := context.Background()
	_, _ = c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)})
	t.Cleanup(func() {
		p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: aws.String(name)})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				break
			}
			for _, o := range page.Contents {
				_, _ = c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(name), Key: o.Key})
			}
		}
		_, _ = c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(name)})
	})
}

// uploadTree puts every file under dir into bucket, keyed by its relative path.
func uploadTree(t *testing.T, c *s3.Client, bucket, dir, prefix string) int {
	return testsupport.UploadTree(t, c, bucket, dir, prefix)
}

// keySet is listKeys as a set.
func keySet(t *testing.T, c *s3.Client, bucket, prefix string) map[string]bool {
	t.Helper()
	set := map[string]bool{}
	for _, k := range listKeys(t, c, bucket, prefix) {
		set[k] = true
	}
	return set
}

func listKeys(t *testing.T, c *s3.Client, bucket, prefix string) []string {
	t.Helper()
	var keys []string
	p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	return keys
}

func loadSFN(t *testing.T, path string) map[string]testsupport.SFNExecution {
	return testsupport.LoadSFNExecutions(t, path)
}

type oracle struct {
	Objects []struct {
		Key           string   `json:"key"`
		Result        string   `json:"result"`
		Error         string   `json:"error"`
		FinalLocation *string  `json:"finalLocation"`
		Tags          []string `json:"tags"`
	} `json:"objects"`
	Tables map[string][]map[string]any `json:"tables"`
}

type manifest struct {
	Objects []struct {
		Key      string `json:"key"`
		BodyKind string `json:"bodyKind"`
		Expected struct {
			ExecutionArn string   `json:"executionArn"`
			Granules     []string `json:"granules"`
		} `json:"expected"`
	} `json:"objects"`
}

// TestRecoverParityWithCumulusV21 runs dla recover over the archive Cumulus
// v21 wrote and compares every outcome and every database row with what
// Cumulus v21's own recovery did (recovery-oracle.json).
func TestRecoverParityWithCumulusV21(t *testing.T) {
	e := newRecoverEnv(t, seed3Seed(t), loadSFN(t, seed3+"/archive/_fixtures/sfn.json"))
	entries, _ := os.ReadDir(seed3 + "/archive/_fixtures/s3")
	for _, b := range entries {
		ensureBucket(t, e.s3, b.Name())
		uploadTree(t, e.s3, b.Name(), filepath.Join(seed3, "archive/_fixtures/s3", b.Name()), "")
	}
	if n := uploadTree(t, e.s3, "demo-internal", seed3+"/archive/demo", "demo/"); n != 150 {
		t.Fatalf("uploaded %d archive objects, want 150", n)
	}
	var orc oracle
	var man manifest
	readJSON(t, seed3+"/recovery-oracle.json", &orc)
	readJSON(t, seed3+"/archive/manifest.json", &man)

	runStart := time.Now().Add(-time.Second)
	r := runAt(t, time.Now, e.env, "", "recover", "--archive", "s3://demo-internal/demo", "--database-url", e.dbURL,
		"--yes", "--concurrency", "1", "-o", "ndjson")
	if r.code != 3 {
		t.Fatalf("exit %d, want 3 (some objects fail): %s", r.code, r.stderr)
	}
	if strings.Contains(r.stdout+r.stderr, "password") {
		t.Errorf("output mentions a password")
	}
	got := map[string]map[string]any{}
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var o map[string]any
		if err := json.Unmarshal([]byte(line), &o); err != nil {
			t.Fatalf("bad ndjson line %q", line)
		}
		if o["type"] == "object" {
			got[o["key"].(string)] = o
		}
	}

	// Which objects the documented improvements change: an expired
	// execution history (v21: TypeError on DescribeExecution), a detail given
	// as a JSON string (v21 cannot read it), unreadable objects (v21 leaves
	// them in sqs/ unlisted; here they move to failed-sqs).
	kinds := map[string]string{}
	excused := map[string]bool{}
	for _, m := range man.Objects {
		kinds[m.Key] = m.BodyKind
	}
	improved := map[string]string{}
	for _, o := range orc.Objects {
		switch {
		case strings.Contains(o.Error, "Cannot destructure property 'startDate'"):
			improved[o.Key] = "expired execution history"
		case kinds[o.Key] == "detail-string" && o.Result == "failed":
			improved[o.Key] = "detail given as a JSON string"
		case o.Result == "unread":
			improved[o.Key] = "unreadable object moved"
		}
	}
	for _, m := range man.Objects {
		if _, ok := improved[m.Key]; ok {
			excused[m.Expected.ExecutionArn] = true
			for _, g := range m.Expected.Granules {
				excused[g] = true
			}
		}
	}

	for key := range improved {
		if g := got[key]; g != nil {
			if arn, ok := g["execution_arn"].(string); ok {
				excused[arn] = true
			}
			if gs, ok := g["granules"].([]any); ok {
				for _, x := range gs {
					excused[x.(map[string]any)["granule_id"].(string)] = true
				}
			}
		}
	}

	// Outcomes and final locations.
	same, total := 0, 0
	for _, o := range orc.Objects {
		total++
		g := got[o.Key]
		if g == nil {
			t.Errorf("%s: no result", o.Key)
			continue
		}
		want := map[string]string{"succeeded": "written", "failed": "failed", "unread": "unread"}[o.Result]
		res := g["result"].(string)
		if res == "dropped" {
			res = "written"
		}
		loc, _ := g["moved_to"].(string)
		wantLoc := ""
		if o.FinalLocation != nil && *o.FinalLocation != o.Key {
			wantLoc = strings.ReplaceAll(*o.FinalLocation, "<TODAY>", time.Now().UTC().Format("2006-01-02"))
		}
		if why, ok := improved[o.Key]; ok {
			t.Logf("improvement (%s): %s: v21 %s, here %s %s %v", why, o.Key, o.Result, res, g["action"], g["error"])
			continue
		}
		if res != want || (want == "failed" && loc != wantLoc) {
			t.Errorf("%s: got %s (%v), v21 %s to %s (%s)", o.Key, res, g["error"], o.Result, wantLoc, o.Error)
			continue
		}
		same++
	}
	t.Logf("object outcomes identical to v21: %d / %d (%d documented improvements)", same, total, len(improved))

	// The archive afterwards: successes gone, failures under failed-sqs.
	left := listKeys(t, e.s3, "demo-internal", "demo/dead-letter-archive/sqs/")
	if len(left) != 0 {
		t.Errorf("objects left in sqs/: %v", left)
	}

	// Every table, normalised as the oracle is.
	tables := dumpTables(t, e.dbURL, runStart)
	rowsSame, rowsTotal, v21Rows, v21Same := 0, 0, 0, 0
	for _, name := range []string{"executions", "pdrs", "granules", "files", "granules_executions"} {
		want := keyRows(name, orc.Tables[name])
		have := keyRows(name, tables[name])
		keys := map[string]bool{}
		for k := range want {
			keys[k] = true
		}
		for k := range have {
			keys[k] = true
		}
		tableSame := 0
		for k := range keys {
			rowsTotal++
			w, h := want[k], have[k]
			if w != nil {
				v21Rows++
			}
			if w != nil && h != nil && equalRows(w, h) {
				v21Same++
				rowsSame++
				tableSame++
				continue
			}
			if rowExcused(name, w, h, excused) {
				continue
			}
			t.Errorf("%s row %s differs: %s", name, k, rowDiff(w, h))
		}
		t.Logf("%s: %d rows identical of %d (v21 %d, here %d)", name, tableSame, len(keys), len(want), len(have))
	}
	t.Logf("database rows identical to v21: %d / %d (of v21's %d rows, %d identical; every other row comes from a documented improvement)",
		rowsSame, rowsTotal, v21Rows, v21Same)
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}

// rowExcused: a row that differs only because of a documented improvement
// (its execution or granule belongs to an improved object).
func rowExcused(table string, w, h map[string]any, excused map[string]bool) bool {
	for _, row := range []map[string]any{w, h} {
		if row == nil {
			continue
		}
		for _, k := range []string{"arn", "execution_arn", "granule_id"} {
			if s, ok := row[k].(string); ok && excused[s] {
				return true
			}
		}
	}
	return false
}

func rowDiff(w, h map[string]any) string {
	if w == nil || h == nil {
		return "v21 " + rowJSON(w) + "\n  here " + rowJSON(h)
	}
	var out []string
	for k, v := range w {
		a, _ := json.Marshal(v)
		b, _ := json.Marshal(h[k])
		if !bytes.Equal(a, b) {
			out = append(out, fmt.Sprintf("\n  %s: v21 %s, here %s", k, a, b))
		}
	}
	sort.Strings(out)
	return strings.Join(out, "")
}

func rowJSON(r map[string]any) string {
	if r == nil {
		return "(none)"
	}
	b, _ := json.Marshal(r)
	return string(b)
}

var naturalKeys = map[string][]string{
	"executions":          {"arn"},
	"pdrs":                {"name"},
	"granules":            {"granule_id", "collection"},
	"files":               {"bucket", "key"},
	"granules_executions": {"granule_id", "collection", "execution_arn"},
}

func keyRows(table string, rows []map[string]any) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, r := range rows {
		var parts []string
		for _, k := range naturalKeys[table] {
			parts = append(parts, fmt.Sprint(r[k]))
		}
		out[strings.Join(parts, "|")] = normaliseRow(r)
	}
	return out
}

// normaliseRow makes the comparison about meaning, not wording: error texts
// written by the database layer (knex vs pgx wording) become their headline.
func normaliseRow(r map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range r {
		out[k] = v
	}
	if e, ok := out["error"].(map[string]any); ok {
		if s, ok := e["errors"].(string); ok {
			var items []map[string]any
			if json.Unmarshal([]byte(s), &items) == nil {
				for _, it := range items {
					if h, _ := it["Error"].(string); strings.HasPrefix(h, "Failed writing") {
						it["Cause"] = "<CAUSE>"
					}
				}
				b, _ := json.Marshal(items)
				e = map[string]any{"errors": string(b)}
				out["error"] = e
			}
		}
	}
	return out
}

func equalRows(a, b map[string]any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

// dumpTables reads the five tables with natural keys for foreign keys,
// timestamps as ISO strings, run-time values as the oracle's markers.
func dumpTables(t *testing.T, dbURL string, runStart time.Time) map[string][]map[string]any {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	queries := map[string]string{
		"executions": `SELECT to_jsonb(e) - 'cumulus_id' - 'async_operation_cumulus_id' - 'collection_cumulus_id' - 'parent_cumulus_id'
  || jsonb_build_object('async_operation', a.id, 'collection', c.name || '___' || c.version, 'parent_arn', p.arn)
  FROM executions e LEFT JOIN async_operations a ON a.cumulus_id = e.async_operation_cumulus_id
  LEFT JOIN collections c ON c.cumulus_id = e.collection_cumulus_id LEFT JOIN executions p ON p.cumulus_id = e.parent_cumulus_id`,
		"pdrs": `SELECT to_jsonb(d) - 'cumulus_id' - 'collection_cumulus_id' - 'provider_cumulus_id' - 'execution_cumulus_id'
  || jsonb_build_object('collection', c.name || '___' || c.version, 'provider', pr.name, 'execution_arn', x.arn)
  FROM pdrs d JOIN collections c ON c.cumulus_id = d.collection_cumulus_id JOIN providers pr ON pr.cumulus_id = d.provider_cumulus_id
  LEFT JOIN executions x ON x.cumulus_id = d.execution_cumulus_id`,
		"granules": `SELECT to_jsonb(g) - 'cumulus_id' - 'collection_cumulus_id' - 'pdr_cumulus_id' - 'provider_cumulus_id'
  || jsonb_build_object('collection', c.name || '___' || c.version, 'pdr', d.name, 'provider', pr.name)
  FROM granules g JOIN collections c ON c.cumulus_id = g.collection_cumulus_id LEFT JOIN pdrs d ON d.cumulus_id = g.pdr_cumulus_id
  LEFT JOIN providers pr ON pr.cumulus_id = g.provider_cumulus_id`,
		"files": `SELECT to_jsonb(f) - 'cumulus_id' - 'granule_cumulus_id'
  || jsonb_build_object('granule_id', g.granule_id, 'granule_collection', c.name || '___' || c.version)
  FROM files f JOIN granules g ON g.cumulus_id = f.granule_cumulus_id JOIN collections c ON c.cumulus_id = g.collection_cumulus_id`,
		"granules_executions": `SELECT jsonb_build_object('granule_id', g.granule_id, 'collection', c.name || '___' || c.version, 'execution_arn', x.arn)
  FROM granules_executions ge JOIN granules g ON g.cumulus_id = ge.granule_cumulus_id
  JOIN collections c ON c.cumulus_id = g.collection_cumulus_id JOIN executions x ON x.cumulus_id = ge.execution_cumulus_id`,
	}
	out := map[string][]map[string]any{}
	for name, q := range queries {
		rows, err := conn.Query(ctx, q)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for rows.Next() {
			var raw []byte
			if err := rows.Scan(&raw); err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.UseNumber()
			if err := dec.Decode(&m); err != nil {
				t.Fatal(err)
			}
			out[name] = append(out[name], normaliseDumped(name, m, runStart))
		}
		rows.Close()
	}
	return out
}

var timestampCols = map[string]bool{"created_at": true, "updated_at": true, "timestamp": true, "beginning_date_time": true,
	"ending_date_time": true, "last_update_date_time": true, "processing_end_date_time": true,
	"processing_start_date_time": true, "production_date_time": true}

func normaliseDumped(table string, m map[string]any, runStart time.Time) map[string]any {
	for k, v := range m {
		switch {
		case timestampCols[k] && v != nil:
			ts, err := time.Parse(time.RFC3339Nano, v.(string))
			if err != nil {
				continue
			}
			if !ts.Before(runStart) {
				m[k] = "<NOW>"
			} else {
				m[k] = ts.UTC().Format("2006-01-02T15:04:05.000Z")
			}
		case k == "duration" && (table == "granules" || table == "pdrs") && v != nil:
			m[k] = "<NOW_DURATION>"
		case (k == "product_volume" || k == "file_size") && v != nil:
			m[k] = string(v.(json.Number))
		}
		if n, ok := m[k].(json.Number); ok {
			f, _ := n.Float64()
			m[k] = f
		}
	}
	return m
}
