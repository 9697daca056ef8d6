package selection

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/dla/gen"
)

var (
	benchOnce  sync.Once
	benchDir   string
	benchGran  string
	benchBytes int64
)

// benchArchive writes 5,000 generated objects once per test binary.
func benchArchive(b *testing.B) (archive.Store, string) {
	benchOnce.Do(func() {
		dir, err := osMkdirTemp()
		if err != nil {
			b.Fatal(err)
		}
		benchDir = dir
		store, _ := archive.NewLocal(dir)
		err = gen.Generate(gen.Options{Stack: "demo", Count: 5000, Seed: 42, Days: 30, Start: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)}, func(o gen.Object) error {
			if len(o.Granules) > 0 && o.Kind == "dla-record" {
				benchGran = o.Granules[0]
			}
			benchBytes += int64(len(o.Body))
			return store.Put(context.Background(), o.Key, o.Body)
		})
		if err != nil {
			b.Fatal(err)
		}
	})
	store, _ := archive.NewLocal(benchDir)
	return store, benchGran
}

// BenchmarkSearchGranule is `dla search --granule X` over 5,000 objects on
// local disk (page cache warm after the first iteration).
func BenchmarkSearchGranule(b *testing.B) {
	store, granule := benchArchive(b)
	scope := Scope{Layout: dla.Layout{Stack: "demo"}, Area: dla.AreaSQS, IncludeLegacy: true, Filter: dla.Filter{Granules: []string{granule}}}
	b.SetBytes(benchBytes)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		st, err := Run(context.Background(), store, scope, 16, func(Result) error { return nil })
		if err != nil || st.Matched == 0 {
			b.Fatalf("%v, %+v", err, st)
		}
	}
}

// BenchmarkSearchAll decodes every object (no prefilter applies).
func BenchmarkSearchAll(b *testing.B) {
	store, _ := benchArchive(b)
	scope := Scope{Layout: dla.Layout{Stack: "demo"}, Area: dla.AreaSQS, IncludeLegacy: true}
	b.SetBytes(benchBytes)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Run(context.Background(), store, scope, 16, func(Result) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}

func osMkdirTemp() (string, error) { return os.MkdirTemp("", "dla-bench") }
