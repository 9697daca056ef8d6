// Package selection finds the archive objects a command works on: it lists
// the date folders in range (and legacy keys when asked), fetches objects
// with bounded concurrency, skips by a byte prefilter what cannot match,
// decodes and filters the rest, and hands results over in a deterministic
// order (date folder, then key) whatever the concurrency. Memory stays
// bounded: at most a window of objects is in flight.
package selection

import (
	"bytes"
	"cmp"
	"context"
	"crypto/md5"
	"errors"
	"fmt"
	"strings"
	"sync"

	"golang.org/x/sync/semaphore"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/dla"
)

// Scope says which objects to look at.
type Scope struct {
	Layout        dla.Layout
	Area          dla.Area // dla.AreaSQS or dla.AreaFailed
	Filter        dla.Filter
	IncludeLegacy bool     // also objects outside date folders
	Keys          []string // explicit keys: no listing, no date-folder pruning
	// KeyStream, when set, yields explicit keys one by one (from a spool
	// file, so that a long list need not be held in memory).
	KeyStream func(yield func(key string) error) error
	Limit     int // stop after this many matches (0: no limit)
	// Digest sets each decoded object's Digest (the MD5 of its bytes).
	Digest bool
	// Skip, when set, leaves out the keys it reports before they are read
	// (dla autorecover: the objects runs tried too often already).
	Skip func(key string) bool
}

// Result is one object handed to the caller: a match, or an object that
// could not be read or decoded (Err set; Decoded may hold a partial view).
type Result struct {
	Entry   archive.Entry
	Decoded *dla.Decoded
	Err     error
}

// Unreadable reports whether the object could not be read or decoded.
func (r Result) Unreadable() bool { return r.Err != nil }

// Stats count what a run looked at.
type Stats struct {
	Listed      int   // objects listed (or keys given)
	Bytes       int64 // bytes fetched
	Prefiltered int   // skipped by the byte prefilter without decoding
	Matched     int
	Unreadable  int
	Truncated   bool // stopped early by the limit
}

type job struct {
	entry  archive.Entry
	result Result
	match  bool
	bytes  int64
	skip   bool  // prefiltered
	held   int64 // of the bytes in flight, from its listing to its hand-over
}

// bytesInFlight bounds the bytes of the objects of a store read over the
// network between their listing and their hand-over to the caller, by
// their listed sizes (unlistedSize when the store gave none: a key asked
// for by name), besides the bound in objects (five times the concurrency).
// A run of small objects is bound by the count, one of large objects by
// the bytes: 64 objects of 1 MiB, where the count alone let 160 in flight
// at concurrency 32. An object larger than the bound is read alone.
const bytesInFlight = 64 << 20

// unlistedSize is what an object of unknown size counts: an SQS message's
// largest (archive objects are SQS messages).
const unlistedSize = 1 << 20

// objectRun is consecutive objects handed to one worker: one object from a
// store read over the network (each read a round trip, worth a worker of
// its own), localRun from a local folder, where a read takes microseconds
// and handing each object over alone (a channel send to the worker, one to
// the printer, a wake-up each) cost more than reading it.
type objectRun struct {
	jobs []job
	done chan struct{}
}

// localRun is how many objects of a local folder go to a worker at once.
const localRun = 16

// runSize is how many consecutive objects of store go to a worker at once.
var runSize = func(store archive.Store) int {
	if archive.LocalReads(store) {
		return localRun
	}
	return 1
}

// Run looks at every object in scope and calls emit, in order, for each
// match and each unreadable object. An error from emit stops the run and is
// returned; so is a listing error. Fetch and decode errors are results.
func Run(ctx context.Context, store archive.Store, scope Scope, concurrency int, emit func(Result) error) (Stats, error) {
	if concurrency < 1 {
		concurrency = 1
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	size := runSize(store)
	// A local folder's reads take microseconds and its listing gives no
	// sizes: its objects are bound by the count alone. The bytes bound
	// only stores whose objects go one to a worker (runSize 1): a run of
	// several would hold its objects' bytes while it is filled, and its
	// next object could then wait for them.
	byBytes := !archive.LocalReads(store) && size == 1
	budget := semaphore.NewWeighted(bytesInFlight)
	jobs := make(chan *objectRun)
	ordered := make(chan *objectRun, max(concurrency*4/size, concurrency+2))
	listErr := make(chan error, 1)
	go func() {
		defer close(ordered)
		defer close(jobs)
		var cur *objectRun
		flush := func() error {
			r := cur
			cur = nil
			if r == nil {
				return nil
			}
			select {
			case ordered <- r:
			case <-ctx.Done():
				return ctx.Err()
			}
			select {
			case jobs <- r:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		err := produce(ctx, store, scope, func(e archive.Entry) error {
			if cur == nil {
				cur = &objectRun{jobs: make([]job, 0, size), done: make(chan struct{})}
			}
			var held int64
			if byBytes {
				held = min(cmp.Or(max(e.Size, 0), unlistedSize), bytesInFlight)
				if err := budget.Acquire(ctx, held); err != nil {
					return err
				}
			}
			cur.jobs = append(cur.jobs, job{entry: e, held: held})
			if len(cur.jobs) == size {
				return flush()
			}
			return nil
		})
		// What was listed before an error is still looked at.
		if ferr := flush(); err == nil {
			err = ferr
		}
		listErr <- err
	}()

	prefilter := scope.Filter.Prefilter()
	if len(scope.Keys) > 0 || scope.KeyStream != nil {
		prefilter = nil // asked for by name: always decode and show
	}
	for range concurrency {
		go func() {
			for r := range jobs {
				for i := range r.jobs {
					work(ctx, store, scope, prefilter, &r.jobs[i])
				}
				close(r.done)
			}
		}()
	}

	var st Stats
	var emitErr error
	for r := range ordered {
		select {
		case <-r.done:
		case <-ctx.Done():
		}
		for i := range r.jobs {
			j := &r.jobs[i]
			if emitErr != nil || ctx.Err() != nil {
				budget.Release(j.held)
				continue // drain so the producer can finish
			}
			st.Listed++
			st.Bytes += j.bytes
			switch {
			case j.skip:
				st.Prefiltered++
			case j.result.Err != nil:
				st.Unreadable++
				emitErr = emit(j.result)
			case j.match:
				st.Matched++
				emitErr = emit(j.result)
				if emitErr == nil && scope.Limit > 0 && st.Matched >= scope.Limit {
					st.Truncated = true
					cancel()
				}
			}
			if emitErr != nil {
				cancel()
			}
			// Handed over: its bytes are the caller's now.
			budget.Release(j.held)
		}
	}
	err := <-listErr
	switch {
	case emitErr != nil:
		return st, emitErr
	case st.Truncated:
		return st, nil
	case err != nil:
		return st, err
	}
	return st, ctx.Err()
}

// buffers are reused across objects: decoding copies what it keeps, so a
// buffer is free again once an object has been handled.
var buffers = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

// work fetches, prefilters, decodes and filters one object.
func work(ctx context.Context, store archive.Store, scope Scope, prefilter func([]byte) bool, j *job) {
	if ctx.Err() != nil {
		return
	}
	bufp := buffers.Get().(*[]byte)
	raw, err := store.GetInto(ctx, j.entry.Key, *bufp)
	if err == nil && cap(raw) <= 4<<20 { // keep the (grown) buffer, but not a rare huge one
		*bufp = raw
	}
	defer func() { *bufp = (*bufp)[:0]; buffers.Put(bufp) }()
	j.result.Entry = j.entry
	if err != nil {
		if ctx.Err() == nil {
			j.result.Err = err
		}
		return
	}
	j.bytes = int64(len(raw))
	// An object without the needle cannot match. An empty or truncated one
	// (the corruption archives really show) is still reported, since nobody
	// can say what it held; a full validation here would cost more than the
	// whole read.
	if prefilter != nil && !prefilter(raw) && looksComplete(raw) {
		j.skip = true
		return
	}
	d, err := dla.Decode(raw)
	d.Key = j.entry.Key
	if scope.Digest {
		d.Digest, d.HasDigest = md5.Sum(raw), true
	}
	info := scope.Layout.ParseKey(j.entry.Key)
	d.Partition = info.Date
	if _, timed := d.EventTime(); d.Partition == "" && !timed {
		// A legacy object without an event time is dated by its last change.
		modified := j.entry.LastModified
		if modified.IsZero() {
			if e, err := store.Stat(ctx, j.entry.Key); err == nil {
				modified = e.LastModified
			}
		}
		if !modified.IsZero() {
			d.ObjectDate = modified.UTC().Format(dla.DateLayout)
		}
	}
	j.result.Decoded = d
	if err != nil {
		j.result.Err = err
		return
	}
	j.match = scope.Filter.Match(&d.Record)
}

// looksComplete: the object starts with '{' and ends with '}' (ignoring
// white space), as every complete archive object does.
func looksComplete(raw []byte) bool {
	t := bytes.TrimSpace(raw)
	return len(t) >= 2 && t[0] == '{' && t[len(t)-1] == '}'
}

// produce lists the objects in scope, in order.
func produce(ctx context.Context, store archive.Store, scope Scope, yield func(archive.Entry) error) error {
	if skip := scope.Skip; skip != nil {
		inner := yield
		yield = func(e archive.Entry) error {
			if !e.IsPrefix && skip(e.Key) {
				return nil
			}
			return inner(e)
		}
	}
	if scope.KeyStream != nil {
		return scope.KeyStream(func(k string) error { return yield(archive.Entry{Key: k}) })
	}
	if len(scope.Keys) > 0 {
		for _, k := range scope.Keys {
			if err := yield(archive.Entry{Key: k}); err != nil {
				return err
			}
		}
		return nil
	}
	root := scope.Layout.AreaPrefix(scope.Area)
	object := func(e archive.Entry) error {
		if isFolderMarker(e) {
			return nil // what "Create folder" writes in the S3 console: not an object
		}
		return yield(e)
	}
	if n := archive.Listings(store); n > 1 {
		return produceConcurrently(ctx, store, scope, root, n, object)
	}
	return listTop(ctx, store, scope, root, object, func(folder string) error {
		return folderErr(folder, store.List(ctx, folder, false, object))
	})
}

// listTop lists the area's top level in key order: object for each entry to
// yield there, folder for each folder whose objects are in scope.
func listTop(ctx context.Context, store archive.Store, scope Scope, root string, object func(archive.Entry) error, folder func(key string) error) error {
	return store.List(ctx, root, true, func(e archive.Entry) error {
		if !e.IsPrefix {
			// An entry named like a date folder in range that is not a
			// folder (a local link to a folder) is yielded, so that it is
			// named; other entries here are legacy flat objects.
			if name := e.Key[len(root):]; scope.IncludeLegacy || (dla.IsDate(name) && scope.Filter.DateInRange(name)) {
				return object(e)
			}
			return nil
		}
		name := e.Key[len(root) : len(e.Key)-1]
		if dla.IsDate(name) {
			if !scope.Filter.DateInRange(name) {
				return nil
			}
		} else if !scope.IncludeLegacy {
			return nil
		}
		return folder(e.Key)
	})
}

// folderErr names the folder whose listing failed (a cancellation is
// passed on as it is).
func folderErr(folder string, err error) error {
	if err == nil || errors.Is(err, context.Canceled) {
		return err
	}
	return fmt.Errorf("listing %s: %w", folder, err)
}

// listAhead is how many entries a folder listed ahead of its turn may hold
// beyond the page its store is handing over (S3: at most 1,000 keys).
const listAhead = 512

// slot is one item of the top level, in order: an entry to yield, or a
// folder being listed into entries (done is closed when the listing has
// ended, err then set). entries is not closed, so that the next folder can
// reuse it once it is drained: a 512-entry buffer is 37 KB, and a year of
// folders made 14 MB of them per scan (2,000 objects in 365 folders: 85
// MB allocated instead of 100, BenchmarkS3SearchCPU).
type slot struct {
	entry   archive.Entry
	entries chan archive.Entry // nil for an entry
	done    chan struct{}
	err     error
}

// produceConcurrently is listTop with up to n folders listed at once, ahead
// of their turn, while entries are still yielded in order: folder by folder,
// each folder's keys as its listing gives them. A folder listed ahead holds
// at most listAhead entries and one page; its listing then waits. Listings
// start in order, and the one whose turn it is always runs, so the bound
// cannot deadlock. On any error or cancellation every listing stops and is
// waited for before this returns.
func produceConcurrently(ctx context.Context, store archive.Store, scope Scope, root string, n int, object func(archive.Entry) error) error {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()

	slots := make(chan *slot, n)
	tokens := make(chan struct{}, n) // one per running folder listing
	// drained entry buffers, for the next folders: at most n are listing
	// and n more wait in slots
	free := make(chan chan archive.Entry, 2*n+1)
	topErr := make(chan error, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(slots)
		push := func(sl *slot) error {
			select {
			case slots <- sl:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		topErr <- listTop(ctx, store, scope, root,
			func(e archive.Entry) error { return push(&slot{entry: e}) },
			func(folder string) error {
				select {
				case tokens <- struct{}{}:
				case <-ctx.Done():
					return ctx.Err()
				}
				var entries chan archive.Entry
				select {
				case entries = <-free:
				default:
					entries = make(chan archive.Entry, listAhead)
				}
				sl := &slot{entries: entries, done: make(chan struct{})}
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer func() { <-tokens }()
					defer close(sl.done)
					sl.err = folderErr(folder, store.List(ctx, folder, false, func(e archive.Entry) error {
						select {
						case sl.entries <- e:
							return nil
						case <-ctx.Done():
							return ctx.Err()
						}
					}))
				}()
				return push(sl)
			})
	}()

	for sl := range slots {
		if sl.entries == nil {
			if err := object(sl.entry); err != nil {
				return err
			}
			continue
		}
		if err := drain(sl, object); err != nil {
			return err
		}
		select {
		case free <- sl.entries:
		default:
		}
	}
	return <-topErr
}

// drain yields a folder's entries until its listing has ended and every
// entry it sent is yielded (the sends happen before done is closed, so
// what is buffered then is all that is left), and returns the listing's
// error.
func drain(sl *slot, object func(archive.Entry) error) error {
	for {
		select {
		case e := <-sl.entries:
			if err := object(e); err != nil {
				return err
			}
		case <-sl.done:
			for range len(sl.entries) {
				if err := object(<-sl.entries); err != nil {
					return err
				}
			}
			return sl.err
		}
	}
}

// isFolderMarker: a zero-byte object whose key ends in "/".
func isFolderMarker(e archive.Entry) bool {
	return strings.HasSuffix(e.Key, "/") && e.Size == 0
}
