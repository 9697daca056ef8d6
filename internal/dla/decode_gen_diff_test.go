package dla_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/dla/gen"
)

// TestDecodeMatchesReferenceOnGenerated compares Decode with the reference
// decoder on generated archives: every generation, malformed objects,
// large payloads, several seeds.
func TestDecodeMatchesReferenceOnGenerated(t *testing.T) {
	kinds := map[string]int{}
	for _, opts := range []gen.Options{
		{Count: 1500, Seed: 1, Days: 30},
		{Count: 1000, Seed: 42, Days: 30, Malformed: 0.1},
		{Count: 500, Seed: 7, Days: 3, MinGranules: 0, MaxGranules: 40},
		{Count: 500, Seed: 9, Days: 3, NoLargePayloads: true, Malformed: 0.2},
	} {
		opts.Start = time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)
		err := gen.Generate(opts, func(o gen.Object) error {
			kinds[o.Kind]++
			got, gerr := dla.Decode(o.Body)
			want, werr := dla.DecodeReference(o.Body)
			if (gerr == nil) != (werr == nil) || (gerr != nil && gerr.Error() != werr.Error()) {
				t.Errorf("seed %d %s (%s): error %v, reference %v", opts.Seed, o.Key, o.Kind, gerr, werr)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("seed %d %s (%s): decoded\n%#v\nreference\n%#v", opts.Seed, o.Key, o.Kind, got, want)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []string{"dla-record", "sqs-record", "cumulus-message", "malformed-truncated", "malformed-body", "malformed-empty"} {
		if kinds[k] == 0 {
			t.Errorf("no %s object generated: %v", k, kinds)
		}
	}
}
