package dlarecover

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/dla/gen"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// generateSeedInto is generateInto with another seed and count: an
// archive of other granules.
func generateSeedInto(t *testing.T, root string, seed uint64, count int) {
	t.Helper()
	store, err := archive.NewLocal(root)
	if err != nil {
		t.Fatal(err)
	}
	if err := gen.Generate(gen.Options{Stack: "s", Count: count, Seed: seed, Days: 2, MinGranules: 1, MaxGranules: 3, Malformed: -1},
		func(o gen.Object) error { return store.Put(context.Background(), o.Key, o.Body) }); err != nil {
		t.Fatal(err)
	}
}

// granuleLines groups a dump's granules, files and granules_executions
// rows by the granule they belong to (granule_id and collection).
func granuleLines(t *testing.T, dump map[string][]map[string]any) map[string]string {
	t.Helper()
	by := map[string][]map[string]any{}
	for _, table := range []string{"granules", "files", "granules_executions"} {
		for _, r := range dump[table] {
			coll := r["collection"]
			if table == "files" {
				coll = r["granule_collection"]
			}
			k := fmt.Sprint(r["granule_id"], " ", coll)
			by[k] = append(by[k], map[string]any{"table": table, "row": r})
		}
	}
	out := map[string]string{}
	for k, rows := range by {
		out[k] = testsupport.TableLines(t, rows)
	}
	return out
}

// TestASequenceMovedBackMidRunStopsAndLeavesOtherGranulesAlone: a
// neighbour moves a sequence back while recover writes (setval(…, 1,
// false)). On v22 the granules' (granules_cumulus_id_seq): a new granule
// would take the cumulus_id of another collection's granule (the primary
// key is (cumulus_id, collection_cumulus_id)), and its files and
// executions would reach that granule's rows. On v21 the files'
// (files_cumulus_id_seq): files_pkey refuses every new file with a 23505
// that names no column. Either is the environment's: the run stops naming
// the sequence, nothing is moved to failed-sqs/ or marked failed that an
// unchanged run leaves alone, and every granule the unchanged run leaves
// as it was keeps its rows (granule, files, executions) exactly. Once the
// sequence is moved on as the stop line says, a re-run ends where the
// unchanged run does. The executions' sequence (executions_cumulus_id_seq)
// likewise, on both: v22's primary key (cumulus_id, created_at) would
// give a new execution the cumulus_id of an older one, and everything that
// finds an execution by cumulus_id (its created_at for a reference, the
// granules' status guards, the links) would then meet two.
func TestASequenceMovedBackMidRunStopsAndLeavesOtherGranulesAlone(t *testing.T) {
	sequences := []string{"files_cumulus_id_seq", "executions_cumulus_id_seq"}
	if testsupport.Generation(t).Partitioned() {
		sequences[0] = "granules_cumulus_id_seq"
	}
	for _, sequence := range sequences {
		t.Run(sequence, func(t *testing.T) { sequenceMovedBackMidRun(t, sequence) })
	}
}

func sequenceMovedBackMidRun(t *testing.T, sequence string) {
	// The granules already in the database: those of archive A.
	load := func(dbURL string) {
		t.Helper()
		root := t.TempDir()
		generateSeedInto(t, root, 91, 150)
		if _, err := schemaRun(t, dbURL, root, 8, nil); err != nil {
			t.Fatalf("loading the other granules: %v", err)
		}
	}

	// The unchanged run: A, then B.
	baseURL := testsupport.NewCumulusDatabase(t, gen.ReferenceSeed())
	baseStart := time.Now().Add(-time.Second)
	load(baseURL)
	beforeB := granuleLines(t, testsupport.DumpTables(t, baseURL, baseStart))
	baseRoot := t.TempDir()
	generateInto(t, baseRoot)
	if _, err := schemaRun(t, baseURL, baseRoot, 8, nil); err != nil {
		t.Fatalf("unchanged run: %v", err)
	}
	baseTables := testsupport.DumpTables(t, baseURL, baseStart)
	base := granuleLines(t, baseTables)
	baseLeft := archiveKeys(baseRoot)
	var others []string // the granules B leaves as they were
	for k, lines := range beforeB {
		if base[k] == lines {
			others = append(others, k)
		}
	}
	slices.Sort(others)
	if len(others) < 100 {
		t.Fatalf("only %d granules that B leaves alone", len(others))
	}

	// The same, with the sequence moved back a dozen objects into B.
	dbURL := testsupport.NewCumulusDatabase(t, gen.ReferenceSeed())
	start := time.Now().Add(-time.Second)
	load(dbURL)
	root := t.TempDir()
	generateInto(t, root)
	sum, err := schemaRun(t, dbURL, root, 8, func(n int) {
		if n == 12 {
			if err := testsupport.ExecSQLErr(dbURL, `SELECT setval('`+sequence+`', 1, false)`); err != nil {
				t.Errorf("the reset: %v", err)
			}
		}
	})
	var stopped *StoppedError
	if !errors.As(err, &stopped) {
		// Reported, and the rows compared all the same.
		t.Errorf("the run did not stop on the sequence moved back: %v (written %d, failed %d, moved %d)", err, sum.Written, sum.Failed, sum.Moved)
		err = errors.New("")
	}
	if !strings.Contains(err.Error(), "sequence public."+sequence+" is at ") {
		t.Errorf("the stop does not name %s as behind: %v", sequence, err)
	}
	t.Logf("the stop: %v", err)
	// The command the stop line gives.
	_, fix, _ := strings.Cut(err.Error(), ": run SELECT setval(")
	fix, _, _ = strings.Cut(fix, "));")
	fix = "SELECT setval(" + fix + "))"

	moved := len(movedToFailed(root, baseLeft))
	if moved > 0 {
		t.Errorf("%d objects moved to failed-sqs/ for the sequence; the unchanged run leaves them elsewhere", moved)
	}
	tables := testsupport.DumpTables(t, dbURL, start)
	now := granuleLines(t, tables)
	changed := 0
	for _, k := range others {
		if now[k] != base[k] {
			if changed < 3 {
				t.Errorf("granule %s's rows differ from the unchanged run's:\n%s\nwant\n%s", k, now[k], base[k])
			}
			changed++
		}
	}
	t.Logf("%d other granules compared (granules, files, granules_executions): %d differ from the unchanged run's", len(others), changed)
	failed := func(dump map[string][]map[string]any) int {
		n := 0
		for _, g := range dump["granules"] {
			if g["status"] == "failed" {
				n++
			}
		}
		return n
	}
	if f, bf := failed(tables), failed(baseTables); f > bf {
		t.Errorf("%d granules failed, the unchanged run leaves %d", f, bf)
	}

	if stopped == nil {
		return
	}
	// Moved on as the stop line says, a re-run ends as the unchanged run.
	testsupport.ExecSQL(t, dbURL, fix)
	if _, err := schemaRun(t, dbURL, root, 8, nil); err != nil {
		t.Fatalf("re-run once the sequence is moved on: %v", err)
	}
	if left := archiveKeys(root); !slices.Equal(left, baseLeft) {
		t.Errorf("the archive after the re-run differs from the unchanged run's")
	}
	checkTablesAsUnchanged(t, dbURL, start, baseTables, " after the re-run")
}
