package dlarecover

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/dla/gen"
	"github.com/deadletter/deadletter/internal/recovery"
)

// TestObjectSpoolUnwrapsAsTheObject spools 2,000 generated objects (every
// generation and status, 3% malformed) and the seed-3 archive as the plan
// pass reads them, replays the spool, and requires that every object the
// plan decoded whole unwraps to the same Cumulus message (or the same
// error) from the spool as from the object itself, with the same
// execution, status and event time; and that every object it could not
// decode comes back marked to be fetched again.
func TestObjectSpoolUnwrapsAsTheObject(t *testing.T) {
	type object struct {
		key string
		d   *dla.Decoded
		err error
	}
	var objects []object
	add := func(key string, body []byte) {
		d, err := dla.Decode(body)
		objects = append(objects, object{key, d, err})
	}
	err := gen.Generate(gen.Options{Stack: "s", Count: 2000, Seed: 7, Days: 5}, func(o gen.Object) error {
		add(o.Key, o.Body)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	seed3 := "../../../testdata/cumulus-v21-seed3/archive"
	_ = filepath.WalkDir(seed3, func(path string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() && filepath.Ext(path) == "" {
			if b, err := os.ReadFile(path); err == nil {
				add(path, b)
			}
		}
		return nil
	})

	s, err := NewObjectSpool()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, o := range objects {
		if err := s.Add(o.key, o.d, o.err); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	unwrap := func(d *dla.Decoded) string {
		m, err := recovery.Unwrap(ctx, d, nil, nil)
		if err != nil {
			return "error: " + err.Error()
		}
		return fmt.Sprintf("%s %s %q", m.Source, m.JSON.Raw, m.Warnings)
	}
	i, whole, refetch, failedStatus := 0, 0, 0, 0
	err = s.Replay(ctx, func(key string, d *dla.Decoded) error {
		o := objects[i]
		i++
		if key != o.key {
			return fmt.Errorf("object %d: key %q, want %q", i, key, o.key)
		}
		if o.err != nil {
			if d != nil {
				t.Errorf("%s: undecodable (%v) but spooled whole", key, o.err)
			}
			refetch++
			return nil
		}
		whole++
		if d == nil {
			t.Errorf("%s: decoded whole but marked to be fetched again", key)
			return nil
		}
		if d.ExecutionArn != o.d.ExecutionArn || d.Status != o.d.Status || d.Time != o.d.Time {
			t.Errorf("%s: execution %q status %q time %q, want %q %q %q", key, d.ExecutionArn, d.Status, d.Time, o.d.ExecutionArn, o.d.Status, o.d.Time)
		}
		switch o.d.Status {
		case "FAILED", "ABORTED", "TIMED_OUT":
			failedStatus++
		}
		if got, want := unwrap(d), unwrap(o.d); got != want {
			t.Errorf("%s: unwrapped from the spool\n %s\nfrom the object\n %s", key, got, want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if i != len(objects) || whole < 1900 || refetch == 0 || failedStatus == 0 {
		t.Fatalf("replayed %d of %d objects: %d whole (%d failed executions), %d to fetch again", i, len(objects), whole, failedStatus, refetch)
	}
}
