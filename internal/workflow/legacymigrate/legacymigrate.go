// Package legacymigrate moves the Dead Letter Archive's legacy objects
// (pre-v18.3 flat keys, and objects under folders that are not dates) into
// date folders, as dla migrate-legacy does, one run at a time (Lock); the
// CLI keeps the plan, the confirmation and the printing.
package legacymigrate

import (
	"context"
	"errors"
	"path"
	"sync"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/dla"
)

// Result is one legacy object's outcome (dla migrate-legacy -o json).
type Result struct {
	Key    string  `json:"key"`
	Target *string `json:"target"`
	// Result: planned (--dry-run), moved, already moved (by a concurrent
	// run, to the same copy), gone (listed, then moved by another run
	// before this one reached it), unreadable or failed.
	Result string  `json:"result"`
	Error  *string `json:"error"`
}

// LockKey is the lock object of migrate-legacy in an archive.
func LockKey(layout dla.Layout) string { return layout.Root() + "locks/migrate-legacy.json" }

// Lock takes the archive's migrate-legacy lock (LockKey) for one run, and
// returns its release: two runs at once would race for each object (both
// copy, both delete, each counting it moved). The lock of a run of this
// host that was killed is taken over; breakLock (--break-lock) first
// removes one another host left.
func Lock(ctx context.Context, store archive.Store, layout dla.Layout, breakLock bool) (release func(), err error) {
	if breakLock {
		if err := archive.BreakLock(ctx, store, LockKey(layout)); err != nil {
			return nil, err
		}
	}
	return archive.TakeLock(ctx, store, LockKey(layout), "dla migrate-legacy")
}

// List yields every legacy object of sqs/: the flat objects at its
// top, and every object under a folder that is not a date.
func List(ctx context.Context, store archive.Store, layout dla.Layout, yield func(archive.Entry) error) error {
	root := layout.AreaPrefix(dla.AreaSQS)
	return store.List(ctx, root, true, func(e archive.Entry) error {
		name := e.Key[len(root):]
		if !e.IsPrefix {
			if dla.IsDate(name) || name == "" {
				return nil // a date folder's marker or a link named like one: not legacy
			}
			return yield(e)
		}
		if dla.IsDate(name[:len(name)-1]) {
			return nil
		}
		return store.List(ctx, e.Key, false, func(e archive.Entry) error {
			if e.Key[len(e.Key)-1] == '/' {
				return nil // a folder marker
			}
			return yield(e)
		})
	})
}

// Migrator moves legacy objects into date folders: each to the folder of
// its event time (or, without one, of the day it was archived), under its
// own name, with archive.MoveAs (never replacing an object, reusing a copy a
// killed run left, recognised by its origin).
type Migrator struct {
	Store   archive.Store
	Layout  dla.Layout
	Message dla.MessageFunc // the Cumulus message lookup of the hoist (nil: none)
	DryRun  bool            // plan each move, move nothing
}

// Move moves one legacy object.
func (m *Migrator) Move(ctx context.Context, e archive.Entry) Result {
	r := Result{Key: e.Key}
	fail := func(result string, err error) Result {
		r.Result = result
		s := err.Error()
		r.Error = &s
		return r
	}
	raw, err := m.Store.Get(ctx, e.Key)
	if errors.Is(err, archive.ErrNotFound) {
		r.Result = "gone" // listed, then moved by another run
		return r
	}
	if err != nil {
		return fail("failed", err)
	}
	h, err := dla.Hoist(raw, m.Message)
	if err != nil { // a Step Functions or S3 read a retry may cure
		return fail("failed", err)
	}
	if h.Raw {
		return fail("unreadable", errors.New(h.Reason))
	}
	date, ok := dla.EventDate(h.Time)
	if !ok { // no time a date folder can name: the day it was archived
		modified := e.LastModified
		if modified.IsZero() {
			st, err := m.Store.Stat(ctx, e.Key)
			if err != nil {
				return fail("failed", err)
			}
			modified = st.LastModified
		}
		date = modified.UTC().Format(dla.DateLayout)
		if modified.IsZero() || !dla.IsDate(date) {
			return fail("failed", errors.New("no event time and no last-modified date to date it by"))
		}
	}
	target := m.Layout.DatePrefix(dla.AreaSQS, date) + path.Base(e.Key)
	r.Target = &target
	if m.DryRun {
		r.Result = "planned"
		return r
	}
	moved, err := archive.MoveAs(ctx, m.Store, e.Key, target, raw, h.JSON)
	if moved != "" {
		r.Target = &moved
	}
	if moved == "" && errors.Is(err, archive.ErrNotFound) {
		r.Target, r.Result = nil, "gone" // read, then moved by another run before this one copied it
		return r
	}
	if errors.Is(err, archive.ErrSourceGone) && moved != "" {
		// Another run (a concurrent migrate-legacy) moved it meanwhile.
		// When the copy at moved is a copy of this key (its origin), both
		// runs met at that one copy: nothing is doubled, nothing left.
		if st, serr := m.Store.Stat(ctx, moved); serr == nil && st.Origin == archive.Origin(e.Key) {
			r.Result = "already moved"
			return r
		}
	}
	if err != nil {
		return fail("failed", err)
	}
	r.Result = "moved"
	return r
}

// Run moves every legacy object, concurrency at a time, handing each
// result to report (never concurrently) and stopping at report's first
// error. An object the interruption of ctx stopped is not reported as
// failed: the run ends with ctx's error.
func (m *Migrator) Run(ctx context.Context, concurrency int, report func(Result) error) error {
	var mu sync.Mutex
	return eachConcurrently(ctx, concurrency, func(yield func(archive.Entry) error) error {
		return List(ctx, m.Store, m.Layout, yield)
	}, func(e archive.Entry) error {
		r := m.Move(ctx, e)
		if ctx.Err() != nil && r.Result == "failed" {
			return ctx.Err() // interrupted: not a failure of this object
		}
		mu.Lock()
		defer mu.Unlock()
		return report(r)
	})
}

// eachConcurrently hands each item list yields to do, n at a time, and
// stops at the first error (after the calls in flight end).
func eachConcurrently[T any](ctx context.Context, n int, list func(yield func(T) error) error, do func(T) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	items := make(chan T)
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range items {
				if err := do(it); err != nil {
					cancel(err)
				}
			}
		}()
	}
	listErr := list(func(it T) error {
		select {
		case items <- it:
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	})
	close(items)
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return err
	}
	return listErr
}
