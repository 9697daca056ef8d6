package dlarecover

import (
	"context"
	"errors"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/cumulusdb"
	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/dla/gen"
	"github.com/deadletter/deadletter/internal/recovery"
	"github.com/deadletter/deadletter/internal/selection"
	"github.com/deadletter/deadletter/internal/workflow/dbwrite"
)

// The whole recover run is driven from its options, without the CLI:
// Open takes the database and the archive lock (a second run of the
// archive is refused while it is held; a dry run takes none), Plan counts
// and spools the selection, Run writes it, deleting what was written and
// moving the rest to failed-sqs/, and Close gives back the lock and the
// garbage collector's settings.
func TestSessionOpensPlansAndRunsFromItsOptions(t *testing.T) {
	ctx := context.Background()
	fx := newRunFixture(t)
	const stack, count = "s", 40
	if err := gen.Generate(gen.Options{Stack: stack, Count: count, Seed: 7, Days: 2, MinGranules: 1, MaxGranules: 3},
		func(o gen.Object) error { return fx.store.Put(ctx, o.Key, o.Body) }); err != nil {
		t.Fatal(err)
	}
	before := fx.left()
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	var warned []string
	opts := Options{Store: fx.store, Location: archive.Location{Dir: fx.root, Stack: stack},
		Scope:       selection.Scope{Layout: dla.Layout{Stack: stack}, Area: dla.AreaSQS, Digest: true},
		DatabaseURL: fx.dbURL, Offline: true, Concurrency: 4, Now: func() time.Time { return now },
		Warnf: func(format string, args ...any) { warned = append(warned, format) }}
	gcBefore := debug.SetGCPercent(-1)
	debug.SetGCPercent(gcBefore)
	_, envGC := os.LookupEnv("GOGC")

	// A dry run: the plan and every result, nothing changed.
	dry := opts
	dry.DryRun = true
	s, err := Open(ctx, dry)
	if err != nil {
		t.Fatal(err)
	}
	if s.lock != nil {
		t.Error("a dry run took the archive lock")
	}
	plan, err := s.Plan(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The selection is the date folders' objects (not the legacy flat
	// keys the generator writes a few of).
	want := plan.Objects
	if want < count-5 || want > count || plan.Schema == "" || !strings.Contains(plan.Archive, stack) || plan.ObjectSpool == nil {
		t.Fatalf("plan: %+v", plan)
	}
	results := 0
	sum, err := s.Run(ctx, func(Object) error { results++; return nil })
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	if results != want || sum.Selected != want || sum.Processed+sum.Left != want || !sum.DryRun {
		t.Errorf("dry run: %d results; %+v", results, sum)
	}
	if left := fx.left(); !slices.Equal(left, before) {
		t.Errorf("a dry run changed the archive: %d objects, %d before", len(left), len(before))
	}
	if n := len(fx.tables(t)["executions"]); n != 0 {
		t.Errorf("a dry run wrote %d executions", n)
	}

	// The run: the lock is held from Open to Close.
	s, err = Open(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if p := debug.SetGCPercent(-1); !envGC && p != gcPercent {
		t.Errorf("GOGC during the run: %d, want %d", p, gcPercent)
	} else {
		debug.SetGCPercent(p)
	}
	if _, err := Open(ctx, opts); !errors.Is(err, cumulusdb.ErrLocked) || dbwrite.StageOf(err) != "" {
		t.Errorf("a second run of the archive: %v, want ErrLocked", err)
	}
	if plan, err = s.Plan(ctx); err != nil || plan.Objects != want {
		t.Fatalf("plan: %v, %+v", err, plan)
	}
	var lines []Object
	sum, err = s.Run(ctx, func(o Object) error { lines = append(lines, o); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != want || sum.Processed != want || sum.Written == 0 || sum.Deleted != sum.Written+sum.Dropped ||
		sum.Moved != sum.Failed+sum.Unreadable || sum.Left != 0 {
		t.Errorf("run: %d lines; %+v (warned %v)", len(lines), sum, warned)
	}
	for _, o := range lines {
		switch {
		case o.Result == recovery.Written || o.Result == recovery.Dropped:
			if o.Action != "deleted" {
				t.Errorf("%s %s: %s", o.Key, o.Result, o.Action)
			}
		case o.Action != "moved" || !strings.Contains(o.MovedTo, "/failed-sqs/"):
			t.Errorf("%s %s: %s to %q", o.Key, o.Result, o.Action, o.MovedTo)
		}
	}
	inPlace := 0
	for _, k := range fx.left() {
		if !strings.Contains(k, "/failed-sqs/") {
			inPlace++
		}
	}
	if inPlace != count-want {
		t.Errorf("%d objects in place after the run, want the %d not selected", inPlace, count-want)
	}
	if n := len(fx.tables(t)["executions"]); n == 0 {
		t.Error("the run wrote no executions")
	}
	s.Close()
	if p := debug.SetGCPercent(-1); p != gcBefore {
		t.Errorf("GOGC after Close: %d, want %d as before", p, gcBefore)
	} else {
		debug.SetGCPercent(p)
	}
	// Closed, the lock is free for the next run.
	s, err = Open(ctx, opts)
	if err != nil {
		t.Fatalf("after Close: %v", err)
	}
	s.Close()
}

// Open's errors name the stage of the setup they came from (dbwrite),
// so that its caller can say what to check; nothing is left open.
func TestSessionOpenNamesTheStageOfItsError(t *testing.T) {
	_, err := Open(context.Background(), Options{Store: nil, DatabaseURL: "postgres://%zz", Offline: true, Concurrency: 1,
		DryRun: true, Now: time.Now})
	if dbwrite.StageOf(err) != dbwrite.StageConnString {
		t.Errorf("a connection string that does not parse: %v (stage %q)", err, dbwrite.StageOf(err))
	}
}
