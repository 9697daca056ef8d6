package apirecover

import (
	"context"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/dla"
)

// The run works from its struct alone (no CLI): what it stages is at its
// key under the staging folder, and Unstage brings each object back to
// its own key, byte for byte, leaving the folder empty.
func TestStageAndUnstageRoundTripWithoutTheCLI(t *testing.T) {
	ctx := context.Background()
	store, err := archive.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	layout := dla.Layout{Stack: "demo"}
	bodies := map[string]string{
		layout.DatePrefix(dla.AreaSQS, "2024-03-01") + "a.json":       `{"time":"2024-03-01T00:00:00Z"}`,
		layout.DatePrefix(dla.AreaSQS, "2024-03-02") + "b with space": `{"time":"2024-03-02T00:00:00Z"}`,
	}
	var keys []string
	for k, b := range bodies {
		if err := store.Put(ctx, k, []byte(b)); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	var logged []string
	r := &Run{Store: store, Layout: layout, Staging: NewStaging(layout, time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)),
		Logf:     func(f string, a ...any) { logged = append(logged, f) },
		Progress: func(string, ...any) {}, Clear: func() {}}
	n, err := r.Stage(ctx, func(yield func(string) error) error {
		for _, k := range keys {
			if err := yield(k); err != nil {
				return err
			}
		}
		return nil
	}, len(keys))
	if err != nil || n != len(keys) {
		t.Fatalf("staged %d: %v", n, err)
	}
	for _, k := range keys {
		if b, err := store.Get(ctx, r.StagedKey(k)); err != nil || string(b) != bodies[k] {
			t.Errorf("%s is not in staging as it was: %q, %v", k, b, err)
		}
		if r.OriginalKey(r.StagedKey(k)) != k {
			t.Errorf("%s: the way back is %s", k, r.OriginalKey(r.StagedKey(k)))
		}
	}
	back, left, err := r.Unstage(ctx)
	if err != nil || back != len(keys) || len(left) != 0 {
		t.Fatalf("unstaged %d, left %v: %v (%v)", back, left, err, logged)
	}
	for k, b := range bodies {
		if got, err := store.Get(ctx, k); err != nil || string(got) != b {
			t.Errorf("%s did not come back as it was: %q, %v", k, got, err)
		}
	}
	if rest, _ := r.Leftovers(ctx); len(rest) != 0 {
		t.Errorf("left in staging: %v", rest)
	}
}
