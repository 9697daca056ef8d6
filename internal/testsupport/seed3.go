package testsupport

// The seed-3 fixture (a real Cumulus v21 archive, testdata/cumulus-v21-seed3)
// as tests load it into the real services, and the database tables read
// back the way its recovery oracle lists them.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/jackc/pgx/v5"
)

// Seed3Dir is testdata/cumulus-v21-seed3, found from the test's directory.
func Seed3Dir(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "testdata", "cumulus-v21-seed3")
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// EnsureBucket creates a fixed-name bucket, emptied and removed afterwards.
func EnsureBucket(t testing.TB, c *s3.Client, name string) {
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

// UploadTree puts every file under dir into bucket, keyed by its relative path.
func UploadTree(t testing.TB, c *s3.Client, bucket, dir, prefix string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		body, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		n++
		_, err = c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket),
			Key: aws.String(prefix + filepath.ToSlash(rel)), Body: bytes.NewReader(body)})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// KeySet is listKeys as a set.
func KeySet(t testing.TB, c *s3.Client, bucket, prefix string) map[string]bool {
	t.Helper()
	set := map[string]bool{}
	for _, k := range ListKeys(t, c, bucket, prefix) {
		set[k] = true
	}
	return set
}

func ListKeys(t testing.TB, c *s3.Client, bucket, prefix string) []string {
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

// LoadSFN reads the executions of a fixture's sfn.json.
func LoadSFN(t testing.TB, path string) map[string]SFNExecution {
	t.Helper()
	exs, err := ReadSFN(path)
	if err != nil {
		t.Fatal(err)
	}
	return exs
}

// DumpTables reads the five tables with natural keys for foreign keys,
// timestamps as ISO strings, run-time values as the oracle's markers.
func DumpTables(t testing.TB, dbURL string, runStart time.Time) map[string][]map[string]any {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	queries := map[string]string{
		// Rows by natural key: ids, and v22's partition keys on references
		// (parent_created_at, execution_created_at, a file's
		// collection_cumulus_id), are replaced by what they point to, so
		// that a v21 and a v22 database compare row for row.
		"executions": `SELECT to_jsonb(e) - 'cumulus_id' - 'async_operation_cumulus_id' - 'collection_cumulus_id' - 'parent_cumulus_id' - 'parent_created_at'
  || jsonb_build_object('async_operation', a.id, 'collection', c.name || '___' || c.version, 'parent_arn', p.arn)
  FROM executions e LEFT JOIN async_operations a ON a.cumulus_id = e.async_operation_cumulus_id
  LEFT JOIN collections c ON c.cumulus_id = e.collection_cumulus_id LEFT JOIN executions p ON p.cumulus_id = e.parent_cumulus_id`,
		"pdrs": `SELECT to_jsonb(d) - 'cumulus_id' - 'collection_cumulus_id' - 'provider_cumulus_id' - 'execution_cumulus_id' - 'execution_created_at'
  || jsonb_build_object('collection', c.name || '___' || c.version, 'provider', pr.name, 'execution_arn', x.arn)
  FROM pdrs d JOIN collections c ON c.cumulus_id = d.collection_cumulus_id JOIN providers pr ON pr.cumulus_id = d.provider_cumulus_id
  LEFT JOIN executions x ON x.cumulus_id = d.execution_cumulus_id`,
		"granules": `SELECT to_jsonb(g) - 'cumulus_id' - 'collection_cumulus_id' - 'pdr_cumulus_id' - 'provider_cumulus_id'
  || jsonb_build_object('collection', c.name || '___' || c.version, 'pdr', d.name, 'provider', pr.name)
  FROM granules g JOIN collections c ON c.cumulus_id = g.collection_cumulus_id LEFT JOIN pdrs d ON d.cumulus_id = g.pdr_cumulus_id
  LEFT JOIN providers pr ON pr.cumulus_id = g.provider_cumulus_id`,
		"files": `SELECT to_jsonb(f) - 'cumulus_id' - 'granule_cumulus_id' - 'collection_cumulus_id'
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
		if err := rows.Err(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	// In one order whatever order PostgreSQL returns them in (which
	// follows the order the rows were written, and a concurrent run's
	// order varies with the machine's load): two databases that hold the
	// same rows dump equal.
	for name, rows := range out {
		keys := make([]string, len(rows))
		for i, r := range rows {
			b, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			keys[i] = string(b)
		}
		sort.Sort(byKey{keys, rows})
		out[name] = rows
	}
	return out
}

// byKey sorts rows by their keys.
type byKey struct {
	keys []string
	rows []map[string]any
}

func (b byKey) Len() int           { return len(b.keys) }
func (b byKey) Less(i, j int) bool { return b.keys[i] < b.keys[j] }
func (b byKey) Swap(i, j int) {
	b.keys[i], b.keys[j] = b.keys[j], b.keys[i]
	b.rows[i], b.rows[j] = b.rows[j], b.rows[i]
}

// TableLines is a table's rows (as DumpTables reads them) as sorted JSON
// lines: two databases hold the same rows when their lines are equal.
func TableLines(t testing.TB, rows []map[string]any) string {
	t.Helper()
	lines := make([]string, 0, len(rows))
	for _, r := range rows {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, string(b))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

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

// Seed3Seed is the seed3 fixture's reference rows.
func Seed3Seed(t testing.TB) []byte {
	b, err := os.ReadFile(filepath.Join(Seed3Dir(t), "archive", "_fixtures", "seed.json"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var timestampCols = map[string]bool{"created_at": true, "updated_at": true, "timestamp": true, "beginning_date_time": true,
	"ending_date_time": true, "last_update_date_time": true, "processing_end_date_time": true,
	"processing_start_date_time": true, "production_date_time": true}

// UploadSeed3 puts the seed-3 fixture's other S3 objects (CMR files, data
// files, `replace` payloads) into their buckets and its 150 archive objects
// into demo-internal under demo/, as Cumulus left them.
//
// The fixture's buckets have fixed names (its messages name them), so one
// test at a time, across the test processes of a `go test ./...`, holds
// them: UploadSeed3 waits for a lock file and keeps it until the test's
// cleanup has removed the buckets.
func UploadSeed3(t testing.TB, c *s3.Client) {
	t.Helper()
	lockSeed3(t)
	dir := Seed3Dir(t)
	entries, _ := os.ReadDir(filepath.Join(dir, "archive", "_fixtures", "s3"))
	for _, b := range entries {
		EnsureBucket(t, c, b.Name())
		UploadTree(t, c, b.Name(), filepath.Join(dir, "archive", "_fixtures", "s3", b.Name()), "")
	}
	EnsureBucket(t, c, "demo-internal")
	if n := UploadTree(t, c, "demo-internal", filepath.Join(dir, "archive", "demo"), "demo/"); n != 150 {
		t.Fatalf("uploaded %d archive objects, want 150", n)
	}
}

// lockSeed3 takes the seed-3 buckets' lock for the rest of the test.
func lockSeed3(t testing.TB) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "deadletter-seed3-buckets.lock"), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		t.Fatal(err)
	}
	// Registered before the buckets' cleanups, so it runs after them.
	t.Cleanup(func() { f.Close() })
}

// TablesText is every table DumpTables reads as text, by name (an empty
// one too), each a "## name (n rows)" line and its TableLines: what a
// golden file of a run's rows holds.
func TablesText(t testing.TB, tables map[string][]map[string]any) string {
	t.Helper()
	names := []string{"executions", "files", "granules", "granules_executions", "pdrs"}
	for name := range tables {
		if !slices.Contains(names, name) {
			t.Fatalf("TablesText: no table %s in DumpTables", name)
		}
	}
	var b strings.Builder
	for _, name := range names {
		fmt.Fprintf(&b, "## %s (%d rows)\n%s\n", name, len(tables[name]), TableLines(t, tables[name]))
	}
	return b.String()
}
