package gen

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/dla"
)

func all(t *testing.T, opts Options) []Object {
	t.Helper()
	var out []Object
	if err := Generate(opts, func(o Object) error { out = append(out, o); return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestGenerateIsDeterministic(t *testing.T) {
	opts := Options{Stack: "demo", Count: 50, Seed: 7, Days: 3}
	a, b := all(t, opts), all(t, opts)
	for i := range a {
		if a[i].Key != b[i].Key || !bytes.Equal(a[i].Body, b[i].Body) {
			t.Fatalf("object %d differs between two runs", i)
		}
	}
	opts.Seed = 8
	if c := all(t, opts); c[0].Key == a[0].Key {
		t.Error("another seed gave the same first key")
	}
}

// TestGeneratedObjectsDecode checks the generator against the decoder: every
// kind appears, well-formed objects decode to the granules they were made
// with, and malformed ones are reported.
func TestGeneratedObjectsDecode(t *testing.T) {
	objs := all(t, Options{Stack: "demo", Count: 600, Seed: 1, Days: 5, Start: time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)})
	kinds := map[string]int{}
	gens := map[dla.Generation]int{}
	statuses := map[string]int{}
	var minSize, maxSize = 1 << 30, 0
	layout := dla.Layout{Stack: "demo"}
	for _, o := range objs {
		kinds[o.Kind]++
		d, err := dla.Decode(o.Body)
		if strings.HasPrefix(o.Kind, "malformed") {
			if err == nil {
				t.Errorf("%s (%s) decoded without error", o.Key, o.Kind)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s (%s): %v", o.Key, o.Kind, err)
		}
		gens[d.Generation]++
		statuses[d.Status]++
		minSize, maxSize = min(minSize, len(o.Body)), max(maxSize, len(o.Body))
		stringDetail := slices.ContainsFunc(d.Problems, func(p string) bool { return strings.Contains(p, "detail is a JSON string") })
		if len(o.Granules) > 0 && !slices.Equal(d.Granules, o.Granules) && !(stringDetail && d.Generation == dla.GenDLARecord && len(d.Granules) == len(o.Granules)) {
			t.Errorf("%s: granules %q, generated %q", o.Key, d.Granules, o.Granules)
		}
		if info := layout.ParseKey(o.Key); !info.Legacy && info.Date != d.Date() {
			t.Errorf("%s: date folder %s, event date %s", o.Key, info.Date, d.Date())
		}
	}
	for _, k := range []string{"dla-record", "sqs-record", "cumulus-message", "malformed-truncated", "malformed-body", "malformed-empty"} {
		if kinds[k] == 0 {
			t.Errorf("no %s objects among %v", k, kinds)
		}
	}
	for _, s := range []string{"RUNNING", "SUCCEEDED", "FAILED", "ABORTED", "TIMED_OUT"} {
		if statuses[s] == 0 {
			t.Errorf("no %s objects", s)
		}
	}
	if len(gens) < 3 {
		t.Errorf("generations: %v", gens)
	}
	if minSize < 2000 || maxSize < 100000 || maxSize > 210000 {
		t.Errorf("sizes from %d to %d bytes, want 2 KB to 200 KB", minSize, maxSize)
	}
	t.Logf("kinds %v; generations %v; sizes %d..%d", kinds, gens, minSize, maxSize)
}

func TestGranuleBounds(t *testing.T) {
	seen := map[int]int{}
	for _, o := range all(t, Options{Count: 300, Seed: 3, MinGranules: 1, MaxGranules: 5, Malformed: -1}) {
		n := len(o.Granules)
		if n < 1 || n > 5 {
			t.Fatalf("%s: %d granules, want 1 to 5", o.Key, n)
		}
		seen[n]++
	}
	if len(seen) != 5 {
		t.Errorf("granule counts seen: %v, want all of 1..5", seen)
	}
}

func TestReferenceSeedNamesEveryCollectionAndProvider(t *testing.T) {
	seed := string(ReferenceSeed())
	for _, o := range all(t, Options{Count: 200, Seed: 4, Malformed: -1}) {
		d, err := dla.Decode(o.Body)
		if err != nil {
			t.Fatal(err)
		}
		name, version, _ := strings.Cut(d.CollectionID, "___")
		if d.CollectionID != "" && !strings.Contains(seed, `{"name":"`+name+`","version":"`+version+`"}`) {
			t.Errorf("%s: collection %s missing from the seed %s", o.Key, d.CollectionID, seed)
		}
		if d.ProviderID != "" && !strings.Contains(seed, `"name":"`+d.ProviderID+`"`) {
			t.Errorf("%s: provider %s missing from the seed", o.Key, d.ProviderID)
		}
	}
}

// An outage archive is DLA records only, none malformed, each with the
// error OutageError gives its index, in sqs/ date folders.
func TestAnOutageArchiveIsDLARecordsWithTheOutagesErrors(t *testing.T) {
	objs := all(t, Options{Stack: "demo", Count: 100, Seed: 3, Days: 2, Outage: true})
	classes := map[string]int{}
	for i, o := range objs {
		d, err := dla.Decode(o.Body)
		if o.Kind != "dla-record" || err != nil || d.Error != OutageError(i) {
			t.Fatalf("object %d (%s, %s): error %q, %v; want %q", i, o.Kind, o.Key, d.Error, err, OutageError(i))
		}
		if !strings.Contains(o.Key, "/dead-letter-archive/sqs/20") {
			t.Errorf("object %d is not in a date folder: %s", i, o.Key)
		}
		classes[dla.ErrorClass(d.Error)]++
	}
	if len(classes) != 3 || classes[dla.ErrorClass(OutageTransient)] != 60 {
		t.Errorf("error classes %v, want 60 transient of 100 in 3 classes", classes)
	}
}
