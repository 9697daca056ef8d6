package dlarecover

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/cumulusdb"
	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/dla/gen"
	"github.com/deadletter/deadletter/internal/recovery"
	"github.com/deadletter/deadletter/internal/selection"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// schemaRun runs recover over what is in root's sqs/ into dbURL, opened as
// dla recover opens it (cumulusdb.Open: the schema's fingerprint taken
// first), calling emitted after each object line.
func schemaRun(t *testing.T, dbURL, root string, conc int, emitted func(n int)) (*Summary, error) {
	t.Helper()
	ctx := context.Background()
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	db, err := cumulusdb.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	store, err := archive.NewLocal(root)
	if err != nil {
		t.Fatal(err)
	}
	spool, err := NewObjectSpool()
	if err != nil {
		t.Fatal(err)
	}
	defer spool.Close()
	for _, key := range archiveKeys(root) {
		if !strings.Contains(key, "/sqs/") {
			continue
		}
		body, err := os.ReadFile(filepath.Join(root, key))
		if err != nil {
			t.Fatal(err)
		}
		d, derr := dla.Decode(body)
		if err := spool.Add(key, d, derr); err != nil {
			t.Fatal(err)
		}
	}
	r := &recoverRun{Store: store, Layout: dla.Layout{Stack: "s"}, DB: db.DB(), Pool: db.Pool,
		Writer: &recovery.Writer{Now: func() time.Time { return now }}, Concurrency: conc,
		Now: func() time.Time { return now }, Sum: &Summary{Selected: spool.Len()}, Objects: spool}
	n := 0
	err = r.runScope(ctx, selection.Scope{Layout: dla.Layout{Stack: "s"}}, func(Object) error {
		n++
		if emitted != nil {
			emitted(n)
		}
		return nil
	})
	return r.Sum, err
}

// movedToFailed are the keys of failed-sqs/ under root that the unchanged
// run (baseLeft) does not leave there: objects a fault moved.
func movedToFailed(root string, baseLeft []string) []string {
	var moved []string
	for _, k := range archiveKeys(root) {
		if strings.Contains(k, "/failed-sqs/") && !slices.Contains(baseLeft, k) {
			moved = append(moved, k)
		}
	}
	return moved
}

// checkTablesAsUnchanged reports each table whose rows written since start
// differ from the unchanged run's; when says at which point ("after the
// re-run").
func checkTablesAsUnchanged(t *testing.T, dbURL string, start time.Time, baseTables map[string][]map[string]any, when string) {
	t.Helper()
	tables := testsupport.DumpTables(t, dbURL, start)
	for name := range baseTables {
		if got, want := testsupport.TableLines(t, tables[name]), testsupport.TableLines(t, baseTables[name]); got != want {
			t.Errorf("table %s%s differs from the unchanged run's (%d rows, want %d)", name, when, len(tables[name]), len(baseTables[name]))
		}
	}
}

// archiveKeys are the keys under root, sorted.
func archiveKeys(root string) []string {
	var keys []string
	_ = filepath.WalkDir(root, func(p string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			rel, _ := filepath.Rel(root, p)
			keys = append(keys, filepath.ToSlash(rel))
		}
		return nil
	})
	slices.Sort(keys)
	return keys
}

func generateInto(t *testing.T, root string) {
	t.Helper()
	store, err := archive.NewLocal(root)
	if err != nil {
		t.Fatal(err)
	}
	if err := gen.Generate(gen.Options{Stack: "s", Count: 120, Seed: 57, Days: 2, MinGranules: 1, MaxGranules: 3, Malformed: -1},
		func(o gen.Object) error { return store.Put(context.Background(), o.Key, o.Body) }); err != nil {
		t.Fatal(err)
	}
}

// TestASchemaChangedMidRunStopsWithTheObjectsInPlace: three migrations a
// neighbour could run while recover writes (a NOT NULL column of files
// losing its default; a NOT NULL column added to files; one added to
// granules_executions), each applied after a dozen objects. Every insert
// then fails on a column no write fills: that is the environment's, never
// the messages', so the run stops, names what changed, moves nothing to
// failed-sqs/ that an unchanged run would not, and marks no granule failed
// for it. Once the change is undone, a re-run leaves the same rows and
// the same archive as a run that never met it.
func TestASchemaChangedMidRunStopsWithTheObjectsInPlace(t *testing.T) {
	baseRoot := t.TempDir()
	generateInto(t, baseRoot)
	baseURL := testsupport.NewCumulusDatabase(t, gen.ReferenceSeed())
	baseStart := time.Now().Add(-time.Second)
	if _, err := schemaRun(t, baseURL, baseRoot, 8, nil); err != nil {
		t.Fatalf("unchanged run: %v", err)
	}
	baseTables := testsupport.DumpTables(t, baseURL, baseStart)
	baseLeft := archiveKeys(baseRoot)

	for _, c := range []struct {
		name   string
		change []string
		undo   []string
		names  string
	}{
		{"files.updated_at loses its default",
			[]string{`ALTER TABLE files ALTER COLUMN updated_at DROP DEFAULT`},
			[]string{`ALTER TABLE files ALTER COLUMN updated_at SET DEFAULT CURRENT_TIMESTAMP`}, "files.updated_at"},
		{"a NOT NULL status column on files",
			[]string{`ALTER TABLE files ADD COLUMN status text NOT NULL DEFAULT 'x'`, `ALTER TABLE files ALTER COLUMN status DROP DEFAULT`},
			[]string{`ALTER TABLE files DROP COLUMN status`}, "files.status"},
		{"a NOT NULL created_at column on granules_executions",
			[]string{`ALTER TABLE granules_executions ADD COLUMN created_at timestamptz NOT NULL DEFAULT now()`, `ALTER TABLE granules_executions ALTER COLUMN created_at DROP DEFAULT`},
			[]string{`ALTER TABLE granules_executions DROP COLUMN created_at`}, "granules_executions.created_at"},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			generateInto(t, root)
			dbURL := testsupport.NewCumulusDatabase(t, gen.ReferenceSeed())
			start := time.Now().Add(-time.Second)
			_, err := schemaRun(t, dbURL, root, 8, func(n int) {
				if n == 12 {
					testsupport.ExecSQL(t, dbURL, c.change...)
				}
			})
			var stopped *StoppedError
			if !errors.As(err, &stopped) {
				t.Fatalf("the run did not stop on the changed schema: %v", err)
			}
			if !strings.Contains(err.Error(), c.names) {
				t.Errorf("the stop does not name %s: %v", c.names, err)
			} else {
				t.Log(err)
			}
			for _, k := range movedToFailed(root, baseLeft) {
				t.Errorf("%s moved to failed-sqs/ on the changed schema; the unchanged run leaves it elsewhere", k)
			}
			testsupport.ExecSQL(t, dbURL, c.undo...)
			if _, err := schemaRun(t, dbURL, root, 8, nil); err != nil {
				t.Fatalf("re-run once undone: %v", err)
			}
			if left := archiveKeys(root); !reflect.DeepEqual(left, baseLeft) {
				t.Errorf("the archive after the re-run differs from the unchanged run's:\n%v\nwant\n%v", left, baseLeft)
			}
			checkTablesAsUnchanged(t, dbURL, start, baseTables, " after the re-run")
		})
	}
}
