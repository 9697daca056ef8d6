package dlacmd

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/cli/iostreams"
	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/dla/gen"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// TestRecoverClosedStdoutNeverDeletesUnwritten: `dla recover -o ndjson |
// head -1`, at concurrency 1 and 8. The run must exit non-zero saying stdout was
// closed, and every object must be in place, moved to failed-sqs/, or gone
// only when the full run deletes it (it was written) and its execution is
// in the database.
func TestRecoverClosedStdoutNeverDeletesUnwritten(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	type obj struct {
		key, arn string
	}
	var objs []obj
	if err := gen.Generate(gen.Options{Stack: "s", Count: 150, Seed: 21, Days: 2, MinGranules: 1, MaxGranules: 3},
		func(o gen.Object) error {
			arn := ""
			if d, err := dla.Decode(o.Body); err == nil {
				arn = d.ExecutionArn
			}
			objs = append(objs, obj{o.Key, arn})
			return nil
		}); err != nil {
		t.Fatal(err)
	}
	setup := func() (string, string, archive.Store) {
		root := t.TempDir()
		store := generateInto(t, root, gen.Options{Stack: "s", Count: 150, Seed: 21, Days: 2, MinGranules: 1, MaxGranules: 3})
		return testsupport.NewCumulusDatabase(t, gen.ReferenceSeed()), root, store
	}
	env := map[string]string{"DEADLETTER_NO_PROMPT": "1"}
	// The full run: which objects a run deletes (they are written).
	dbURL, root, store := setup()
	full := runAt(t, func() time.Time { return now }, env, "", "recover", "--archive", root+"/s", "--database-url", dbURL,
		"--include-legacy", "--offline", "--yes", "-o", "ndjson")
	if full.code != 0 && full.code != 3 {
		t.Fatalf("full run: exit %d: %s", full.code, full.stderr)
	}
	deletable := map[string]bool{}
	for _, o := range objs {
		if _, err := store.Stat(context.Background(), o.key); err != nil && strings.Contains(full.stdout, `"key":"`+o.key+`","result":"written","action":"deleted"`) {
			deletable[o.key] = true
		}
	}
	if len(deletable) < 20 {
		t.Fatalf("only %d objects deleted by the full run", len(deletable))
	}
	for _, conc := range []int{1, 8} {
		dbURL, root, store := setup()
		ios, _, _, errOut := iostreams.Test()
		ios.Out = &epipeAfter{n: 1}
		getenv := func(k string) string { return env[k] }
		ios.SetEnv(getenv)
		f := NewFactory(ios, getenv)
		f.Now = func() time.Time { return now }
		args := []string{"recover", "--archive", root + "/s", "--database-url", dbURL, "--include-legacy", "--offline",
			"--yes", "--concurrency", strconv.Itoa(conc), "-o", "ndjson"}
		code := Run(context.Background(), f, args)
		if code == 0 || !strings.Contains(errOut.String(), "stdout") {
			t.Errorf("concurrency %d: exit %d: %s", conc, code, errOut.String())
		}
		conn, err := pgx.Connect(context.Background(), dbURL)
		if err != nil {
			t.Fatal(err)
		}
		written := map[string]bool{}
		rows, err := conn.Query(context.Background(), "SELECT arn FROM executions")
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var a string
			if err := rows.Scan(&a); err != nil {
				t.Fatal(err)
			}
			written[a] = true
		}
		conn.Close(context.Background())
		gone := 0
		for _, o := range objs {
			if _, err := store.Stat(context.Background(), o.key); err == nil {
				continue
			}
			if !deletable[o.key] {
				continue // moved to failed-sqs/ (the full run moves it too)
			}
			gone++
			if o.arn != "" && !written[o.arn] {
				t.Errorf("concurrency %d: %s was deleted, its execution %s is not in the database", conc, o.key, o.arn)
			}
		}
		t.Logf("concurrency %d: %d written objects deleted before the run stopped", conc, gone)
	}
}
