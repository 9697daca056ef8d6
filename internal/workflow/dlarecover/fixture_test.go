package dlarecover

import (
	"context"
	"encoding/json"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/dla/gen"
	"github.com/deadletter/deadletter/internal/selection"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// runFixture is what a recover run of the tests needs: a Cumulus database
// seeded with the reference seed, a local archive, and the plan's object
// spool; everything is closed when the test ends.
type runFixture struct {
	runStart time.Time // before anything was written: DumpTables's NOW
	dbURL    string
	pool     *pgxpool.Pool
	root     string
	store    archive.Store
	spool    *ObjectSpool
}

func newRunFixture(t *testing.T) *runFixture {
	t.Helper()
	fx := &runFixture{runStart: time.Now().Add(-time.Second), root: t.TempDir()}
	fx.dbURL = testsupport.NewCumulusDatabase(t, gen.ReferenceSeed())
	var err error
	if fx.pool, err = pgxpool.New(context.Background(), fx.dbURL); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fx.pool.Close)
	if fx.store, err = archive.NewLocal(fx.root); err != nil {
		t.Fatal(err)
	}
	if fx.spool, err = NewObjectSpool(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fx.spool.Close() })
	return fx
}

// put writes an object into the archive and the plan's spool, decoded as
// the plan would.
func (fx *runFixture) put(t *testing.T, key string, body []byte) {
	t.Helper()
	if err := fx.store.Put(context.Background(), key, body); err != nil {
		t.Fatal(err)
	}
	d, derr := dla.Decode(body)
	if err := fx.spool.Add(key, d, derr); err != nil {
		t.Fatal(err)
	}
}

// generate puts a generated archive.
func (fx *runFixture) generate(t *testing.T, opts gen.Options) {
	t.Helper()
	if err := gen.Generate(opts, func(o gen.Object) error { fx.put(t, o.Key, o.Body); return nil }); err != nil {
		t.Fatal(err)
	}
}

// left is the archive's keys after a run, sorted.
func (fx *runFixture) left() []string {
	var keys []string
	_ = filepath.WalkDir(fx.root, func(p string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			rel, _ := filepath.Rel(fx.root, p)
			keys = append(keys, filepath.ToSlash(rel))
		}
		return nil
	})
	slices.Sort(keys)
	return keys
}

// tables are the database's rows after a run, as DumpTables gives them.
func (fx *runFixture) tables(t *testing.T) map[string][]map[string]any {
	return testsupport.DumpTables(t, fx.dbURL, fx.runStart)
}

// outcome is what a run left: its object lines (JSON), its summary (without
// its seconds), the tables, and what is left in the archive.
type outcome struct {
	lines  []string
	sum    Summary
	tables map[string][]map[string]any
	left   []string
}

// outcome runs r over scope and returns what it left.
func (fx *runFixture) outcome(t *testing.T, r *recoverRun, scope selection.Scope) outcome {
	t.Helper()
	var o outcome
	if err := r.runScope(context.Background(), scope, func(obj Object) error {
		b, err := json.Marshal(obj)
		o.lines = append(o.lines, string(b))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	o.sum = *r.Sum
	o.sum.Seconds = 0
	o.tables = fx.tables(t)
	o.left = fx.left()
	return o
}

// concurrent is the concurrency of the runs compared with a concurrency-1
// run's golden file: dla recover's default --concurrency.
const concurrent = 32

// goldenText is what a golden file of a run holds: its object lines in
// their order, its summary, what is left in the archive, and every table
// (testsupport.TablesText).
func goldenText(t *testing.T, lines []string, sum Summary, left []string, tables map[string][]map[string]any) string {
	t.Helper()
	b, err := json.Marshal(sum)
	if err != nil {
		t.Fatal(err)
	}
	return "# object lines\n" + strings.Join(lines, "\n") + "\n# summary\n" + string(b) +
		"\n# left in the archive\n" + strings.Join(left, "\n") + "\n" + testsupport.TablesText(t, tables)
}

// text is the outcome as its golden file holds it (goldenText).
func (o outcome) text(t *testing.T) string {
	return goldenText(t, o.lines, o.sum, o.left, o.tables)
}
