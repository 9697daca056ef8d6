package selection

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/dla"
)

// listFailsAfter is a store whose listing fails after n objects, over
// all its folders.
type listFailsAfter struct {
	archive.Store
	n    int
	seen *int
}

func (s listFailsAfter) List(ctx context.Context, prefix string, delimited bool, fn func(archive.Entry) error) error {
	return s.Store.List(ctx, prefix, delimited, func(e archive.Entry) error {
		if !e.IsPrefix {
			if *s.seen == s.n {
				return errors.New("boom")
			}
			*s.seen++
		}
		return fn(e)
	})
}

// Objects handed to the workers in runs come out as they do one by one:
// in key order, every one, whatever the run's length and the concurrency;
// and when the listing fails part of the way through a run, the objects
// listed before the failure are still looked at and emitted, then the
// error is returned.
func TestObjectRunsChangeNothingAndKeepWhatWasListedBeforeAnError(t *testing.T) {
	defer func(f func(archive.Store) int) { runSize = f }(runSize)
	scope := Scope{Layout: dla.Layout{Stack: "demo"}, Area: dla.AreaSQS}
	collect := func(store archive.Store, size, conc int) ([]string, Stats, error) {
		runSize = func(archive.Store) int { return size }
		var keys []string
		st, err := Run(context.Background(), store, scope, conc, func(r Result) error {
			keys = append(keys, r.Entry.Key)
			return nil
		})
		return keys, st, err
	}
	want, wantSt, err := collect(seedStore(t), 1, 1)
	if err != nil || len(want) != 150 {
		t.Fatalf("%d keys, %v", len(want), err)
	}
	for _, size := range []int{4, 7, 16, 200} {
		for _, conc := range []int{1, 3, 16} {
			got, st, err := collect(seedStore(t), size, conc)
			if err != nil || !slices.Equal(got, want) || st != wantSt {
				t.Fatalf("runs of %d at concurrency %d: %d keys, %+v, %v; want %d, %+v", size, conc, len(got), st, err, len(want), wantSt)
			}
		}
	}
	// The listing fails after 10 objects (in the middle of a run of 4 or 16).
	failing := func() listFailsAfter { return listFailsAfter{Store: seedStore(t), n: 10, seen: new(int)} }
	one, _, oneErr := collect(failing(), 1, 1)
	if oneErr == nil || !strings.Contains(oneErr.Error(), "boom") || len(one) != 10 {
		t.Fatalf("one by one: %d keys, %v", len(one), oneErr)
	}
	for _, size := range []int{4, 16} {
		got, _, err := collect(failing(), size, 3)
		if err == nil || err.Error() != oneErr.Error() || !slices.Equal(got, one) {
			t.Fatalf("runs of %d: %d keys (%v), want the %d listed before the failure (%v)", size, len(got), err, len(one), oneErr)
		}
	}
}
