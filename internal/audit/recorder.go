package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/deadletter/deadletter/internal/archive"
)

// The bounds of a chunk of items: a SIGKILL loses at most the items of
// the chunk being gathered, and memory holds at most one chunk (more only
// while the store refuses writes).
const (
	DefaultChunkLines = 500
	DefaultChunkEvery = 5 * time.Second
)

// Options tune a Recorder.
type Options struct {
	ChunkLines int           // default DefaultChunkLines
	ChunkEvery time.Duration // default DefaultChunkEvery
	Now        func() time.Time
	// Warnf says, once, that a chunk could not be written (it is kept
	// and tried again with the next).
	Warnf func(format string, args ...any)
}

// UnwritableError is a record that could not be begun: the run must not
// move anything.
type UnwritableError struct {
	Where string
	Err   error
}

func (e *UnwritableError) Error() string {
	return fmt.Sprintf("the audit record cannot be written to %s: %v; nothing was changed (--no-audit runs without a record)", e.Where, e.Err)
}
func (e *UnwritableError) Unwrap() error { return e.Err }

// Recorder writes one run's record: Begin, Add for each item (from any
// goroutine), Finish.
type Recorder struct {
	store  archive.Store
	folder string // <base><date>/<run-id>/
	runID  string
	opts   Options

	mu       sync.Mutex
	pending  []Item
	total    int
	chunk    int
	failed   *chunk // the chunk a write failed, tried again first
	lastErr  error  // the last chunk's write error (nil: it was written)
	warned   bool
	full     chan struct{}
	stop     chan struct{}
	done     chan struct{}
	finished bool
	writeMu  sync.Mutex // one chunk written at a time, in order
	written  *sync.Cond // signalled (on mu) after each chunk's write
}

// Where names the record's folder for people: store and prefix.
func Where(store archive.Store, prefix string) string {
	return strings.TrimSuffix(store.String(), "/") + "/" + prefix
}

// Begin writes the started record under base (a folder prefix ending in
// "/", or ""), before anything moves. Its error is an *UnwritableError:
// the caller refuses the run.
func Begin(ctx context.Context, store archive.Store, base string, s Started, opts Options) (*Recorder, error) {
	if opts.ChunkLines <= 0 {
		opts.ChunkLines = DefaultChunkLines
	}
	if opts.ChunkEvery <= 0 {
		opts.ChunkEvery = DefaultChunkEvery
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if s.StartedAt.IsZero() {
		s.StartedAt = opts.Now()
	}
	s.StartedAt = s.StartedAt.UTC()
	if s.RunID == "" {
		s.RunID = NewRunID(s.StartedAt)
	}
	s.Schema, s.Record = Schema, "started"
	s.Argv = RedactArgv(s.Argv)
	folder := RunFolder(base, s.StartedAt, s.RunID)
	r := &Recorder{store: store, folder: folder, runID: s.RunID, opts: opts,
		full: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	r.written = sync.NewCond(&r.mu)
	body, err := json.Marshal(s)
	if err != nil {
		return nil, &UnwritableError{Where: Where(store, folder), Err: err}
	}
	if err := putRecord(ctx, store, folder+"started.json", append(body, '\n')); err != nil {
		return nil, &UnwritableError{Where: Where(store, folder), Err: err}
	}
	go r.flusher()
	return r, nil
}

// RunFolder is the folder of a run's record under base.
func RunFolder(base string, started time.Time, runID string) string {
	return base + started.UTC().Format("2006-01-02") + "/" + runID + "/"
}

// RunID is the run's id.
func (r *Recorder) RunID() string { return r.runID }

// Folder is the key prefix of the run's record.
func (r *Recorder) Folder() string { return r.folder }

// Where names the record for people.
func (r *Recorder) Where() string { return Where(r.store, r.folder) }

// Add queues one item; a full chunk is written in the background. While
// two chunks wait (the store writes them slower than the run adds items)
// it waits for one to be written, so that the items not yet written stay
// within the chunk gathered and the one being written (unless the store
// refuses writes: then they are kept, and tried again).
func (r *Recorder) Add(it Item) {
	r.mu.Lock()
	r.pending = append(r.pending, it)
	r.total++
	full := len(r.pending) >= r.opts.ChunkLines
	for len(r.pending) >= 2*r.opts.ChunkLines && r.lastErr == nil && !r.finished {
		select {
		case r.full <- struct{}{}:
		default:
		}
		r.written.Wait()
	}
	r.mu.Unlock()
	if full {
		select {
		case r.full <- struct{}{}:
		default:
		}
	}
}

func (r *Recorder) flusher() {
	defer close(r.done)
	t := time.NewTicker(r.opts.ChunkEvery)
	defer t.Stop()
	for {
		all := false
		select {
		case <-r.stop:
			return
		case <-r.full:
		case <-t.C:
			all = true
		}
		r.flush(context.Background(), all)
	}
}

// chunk is one items-NNNNNN.ndjson: its bytes and how many items.
type chunk struct {
	body  []byte
	items int
}

// chunkWait bounds one chunk's write, so that a store that hangs cannot
// hold the run's end forever (the chunk is kept and counted).
const chunkWait = time.Minute

// finishRetry is the first wait between Finish's tries of what is left.
const finishRetry = 250 * time.Millisecond

// flush writes what is pending as the next chunks, of at most ChunkLines
// items each. A chunk that cannot be written is kept as it is and tried
// again first, under the same number, with the next flush: a retry whose
// first try had landed (its reply lost) then finds its own bytes there,
// and no item is ever written twice.
func (r *Recorder) flush(ctx context.Context, all bool) error {
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	for {
		c := r.failed
		if c == nil {
			r.mu.Lock()
			n := min(len(r.pending), r.opts.ChunkLines)
			if n < r.opts.ChunkLines {
				// Only whole chunks while the run goes on: the rest
				// waits for the next tick (or the end), so that a run
				// adding items as fast as they are written does not
				// write a chunk of a few items after every chunk.
				if !all {
					n = 0
				}
				all = false // one part chunk a flush at the most
			}
			items := r.pending[:n:n]
			r.pending = r.pending[n:]
			r.mu.Unlock()
			if n == 0 {
				return nil
			}
			var b bytes.Buffer
			enc := json.NewEncoder(&b)
			enc.SetEscapeHTML(false)
			for _, it := range items {
				_ = enc.Encode(it)
			}
			c = &chunk{body: b.Bytes(), items: n}
		}
		wctx, cancel := context.WithTimeout(ctx, chunkWait)
		err := putRecord(wctx, r.store, fmt.Sprintf("%sitems-%06d.ndjson", r.folder, r.chunk+1), c.body)
		cancel()
		if err != nil {
			r.mu.Lock()
			r.failed = c
			r.lastErr = err
			r.written.Broadcast()
			warn := !r.warned
			r.warned = true
			r.mu.Unlock()
			if warn && r.opts.Warnf != nil {
				r.opts.Warnf("audit: %d items not yet written to %s (kept, tried again): %v", c.items, r.Where(), err)
			}
			return err
		}
		r.mu.Lock()
		r.failed = nil
		r.lastErr = nil
		r.chunk++
		r.written.Broadcast()
		r.mu.Unlock()
	}
}

// putRecord stores body at key only when the key is free. A put that
// failed but finds its own bytes there landed while its reply was lost
// (the SDK's retry then meets its own object, or every reply was lost):
// done. The key is the run's own (its folder has the run's random id), so
// the same bytes there can only be this put's.
func putRecord(ctx context.Context, store archive.Store, key string, body []byte) error {
	err := store.PutNew(ctx, key, body, "")
	if err != nil && ctx.Err() == nil {
		if got, gerr := store.Get(ctx, key); gerr == nil && bytes.Equal(got, body) {
			return nil
		}
	}
	return err
}

// Finish writes the remaining items and the finished record. It is called
// once, with a context that outlives an interrupt. Its error names what
// could not be recorded.
func (r *Recorder) Finish(ctx context.Context, f Finished) error {
	r.mu.Lock()
	if r.finished {
		r.mu.Unlock()
		return nil
	}
	r.finished = true
	r.written.Broadcast()
	r.mu.Unlock()
	close(r.stop)
	<-r.done
	// What is left, tried a few times: the run is over, and this is the
	// record's last chance.
	ferr := r.flush(ctx, true)
	for wait := finishRetry; ferr != nil && wait <= 4*finishRetry && ctx.Err() == nil; wait *= 2 {
		time.Sleep(wait)
		ferr = r.flush(ctx, true)
	}
	r.mu.Lock()
	f.Unrecorded = len(r.pending)
	if r.failed != nil {
		f.Unrecorded += r.failed.items
	}
	f.Items = r.total
	r.mu.Unlock()
	f.Schema, f.Record, f.RunID = Schema, "finished", r.runID
	if f.EndedAt.IsZero() {
		f.EndedAt = r.opts.Now()
	}
	f.EndedAt = f.EndedAt.UTC()
	f.Error = RedactText(f.Error)
	body, err := json.Marshal(f)
	if err != nil {
		return err
	}
	if err := putRecord(ctx, r.store, r.folder+"finished.json", append(body, '\n')); err != nil {
		return fmt.Errorf("audit: the finished record could not be written to %s: %w", r.Where(), err)
	}
	if ferr != nil {
		return fmt.Errorf("audit: %d items could not be written to %s: %w", f.Unrecorded, r.Where(), ferr)
	}
	return nil
}
