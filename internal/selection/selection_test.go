package selection

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/dla"
)

const seedArchive = "../../testdata/cumulus-v21-seed3/archive"

func seedStore(t *testing.T) archive.Store {
	t.Helper()
	s, err := archive.NewLocal(seedArchive)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func run(t *testing.T, store archive.Store, scope Scope, conc int) ([]string, Stats) {
	t.Helper()
	var keys []string
	st, err := Run(context.Background(), store, scope, conc, func(r Result) error {
		mark := ""
		if r.Unreadable() {
			mark = " !"
		}
		keys = append(keys, r.Entry.Key+mark)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return keys, st
}

func TestRunOrderIsDeterministic(t *testing.T) {
	store := seedStore(t)
	scope := Scope{Layout: dla.Layout{Stack: "demo"}, Area: dla.AreaSQS}
	one, st := run(t, store, scope, 1)
	if st.Listed != 150 || st.Unreadable != 3 || st.Matched != 147 {
		t.Fatalf("stats = %+v", st)
	}
	if !slices.IsSorted(one) {
		t.Error("results are not in key (date, then key) order")
	}
	for range 3 {
		if many, _ := run(t, store, scope, 16); !slices.Equal(one, many) {
			t.Fatal("order differs between concurrency 1 and 16")
		}
	}
}

// TestPrefilterNeverLosesAMatch compares prefiltered searches with a full
// decode of every object, for every granule, collection and execution name.
func TestPrefilterNeverLosesAMatch(t *testing.T) {
	store := seedStore(t)
	layout := dla.Layout{Stack: "demo"}
	var all []*dla.Decoded
	filepath.WalkDir(filepath.Join(seedArchive, "demo"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			raw, _ := os.ReadFile(p)
			dec, derr := dla.Decode(raw)
			if derr == nil {
				rel, _ := filepath.Rel(seedArchive, p)
				dec.Key = filepath.ToSlash(rel)
				dec.Partition = layout.ParseKey(dec.Key).Date
				all = append(all, dec)
			}
		}
		return nil
	})
	var filters []dla.Filter
	for _, d := range all {
		for _, g := range d.Granules {
			if g != "" {
				filters = append(filters, dla.Filter{Granules: []string{g}})
			}
		}
		if d.CollectionID != "" {
			filters = append(filters, dla.Filter{Collections: []string{d.CollectionID}}, dla.Filter{Collections: []string{strings.Split(d.CollectionID, "___")[0]}})
		}
		if d.ExecutionArn != "" {
			filters = append(filters, dla.Filter{Executions: []string{d.ExecutionName()}})
		}
	}
	if len(filters) < 200 {
		t.Fatalf("only %d filters built", len(filters))
	}
	for _, f := range filters[:300] {
		var want []string
		for _, d := range all {
			if f.Match(&d.Record) {
				want = append(want, d.Key)
			}
		}
		slices.Sort(want)
		got, _ := run(t, store, Scope{Layout: layout, Area: dla.AreaSQS, Filter: f}, 4)
		got = slices.DeleteFunc(got, func(k string) bool { return strings.HasSuffix(k, " !") })
		if !slices.Equal(got, want) {
			t.Fatalf("filter %+v: got %q, want %q", f, got, want)
		}
	}
}

func TestRunDateRangeAndLimit(t *testing.T) {
	store := seedStore(t)
	scope := Scope{Layout: dla.Layout{Stack: "demo"}, Area: dla.AreaSQS, Filter: dla.Filter{From: "2024-01-08", To: "2024-01-09"}}
	keys, st := run(t, store, scope, 4)
	for _, k := range keys {
		if !strings.Contains(k, "/2024-01-08/") && !strings.Contains(k, "/2024-01-09/") {
			t.Errorf("out of range: %s", k)
		}
	}
	if st.Listed == 0 || st.Listed > 10 {
		t.Errorf("listed %d objects: only the two folders should be listed", st.Listed)
	}
	scope = Scope{Layout: dla.Layout{Stack: "demo"}, Area: dla.AreaSQS, Limit: 5}
	keys, st = run(t, store, scope, 8)
	if len(keys) != 5 || !st.Truncated {
		t.Errorf("limit 5: got %d results, truncated=%v", len(keys), st.Truncated)
	}
}

func TestRunLegacyAndExplicitKeys(t *testing.T) {
	dir := t.TempDir()
	store, _ := archive.NewLocal(dir)
	ctx := context.Background()
	msg := `{"cumulus_meta":{"state_machine":"arn:aws:states:r:1:stateMachine:sm","execution_name":"old"},"meta":{"status":"failed"}}`
	store.Put(ctx, "st/dead-letter-archive/sqs/old-1.json", []byte(msg))
	store.Put(ctx, "st/dead-letter-archive/sqs/2024-01-01/new", []byte(`{"body":"{}","executionArn":null,"collectionId":null,"granules":null}`))
	scope := Scope{Layout: dla.Layout{Stack: "st"}, Area: dla.AreaSQS}
	if keys, _ := run(t, store, scope, 2); len(keys) != 1 {
		t.Errorf("without legacy: %q", keys)
	}
	scope.IncludeLegacy = true
	if keys, _ := run(t, store, scope, 2); len(keys) != 2 {
		t.Errorf("with legacy: %q", keys)
	}
	// The legacy message has no event time: its date is the file's own.
	today := time.Now().UTC().Format(dla.DateLayout)
	scope.Filter = dla.Filter{From: today, To: today}
	if keys, _ := run(t, store, scope, 2); !slices.Equal(keys, []string{"st/dead-letter-archive/sqs/old-1.json"}) {
		t.Errorf("legacy object dated by its modification time: %q", keys)
	}
	scope = Scope{Layout: dla.Layout{Stack: "st"}, Keys: []string{"st/dead-letter-archive/sqs/old-1.json", "st/missing"}}
	keys, st := run(t, store, scope, 2)
	if !slices.Equal(keys, []string{"st/dead-letter-archive/sqs/old-1.json", "st/missing !"}) || st.Unreadable != 1 {
		t.Errorf("explicit keys: %q %+v", keys, st)
	}
}

// TestPrefilteredSearchStillReportsTruncatedObjects: an object cut short
// cannot be proven not to match, so a granule search reports it.
func TestPrefilteredSearchStillReportsTruncatedObjects(t *testing.T) {
	dir := t.TempDir()
	store, _ := archive.NewLocal(dir)
	ctx := context.Background()
	store.Put(ctx, "st/dead-letter-archive/sqs/2024-01-01/cut", []byte(`{"messageId":"m","body":"{\"detail\":`))
	store.Put(ctx, "st/dead-letter-archive/sqs/2024-01-01/empty", nil)
	store.Put(ctx, "st/dead-letter-archive/sqs/2024-01-01/other", []byte(`{"body":"{}","executionArn":null,"collectionId":null,"granules":["G2"]}`))
	scope := Scope{Layout: dla.Layout{Stack: "st"}, Area: dla.AreaSQS, Filter: dla.Filter{Granules: []string{"G1"}}}
	keys, st := run(t, store, scope, 2)
	want := []string{"st/dead-letter-archive/sqs/2024-01-01/cut !", "st/dead-letter-archive/sqs/2024-01-01/empty !"}
	if !slices.Equal(keys, want) || st.Prefiltered != 1 {
		t.Errorf("got %q (%+v), want %q and one prefiltered", keys, st, want)
	}
}
