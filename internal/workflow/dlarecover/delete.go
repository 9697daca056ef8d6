package dlarecover

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/dla"
)

// Deleting what was written: in batches, by a goroutine of its own, each
// object only while it still holds the bytes that were written.

// deleteBatch is how many written objects are deleted at once.
var deleteBatch = 1000

// pendingDelete is a written object to delete: with the digest of the
// bytes that were written, it is deleted only while it still holds them.
type pendingDelete struct {
	key     string
	sum     [16]byte
	checked bool // sum is set
}

// deleteConcurrency bounds the conditional deletes of one batch in flight.
const deleteConcurrency = 16

// remove deletes a written object (batched), unless --keep or --dry-run.
func (r *Run) remove(ctx context.Context, o *Object, d *dla.Decoded) {
	switch {
	case r.DryRun:
		o.Action = "would delete"
	case r.Keep:
		o.Action = "kept"
	default:
		o.Action = "deleted"
		r.mu.Lock()
		pd := pendingDelete{key: o.Key}
		if d != nil && d.HasDigest {
			pd.sum, pd.checked = d.Digest, true
		}
		r.toDelete = append(r.toDelete, pd)
		full := len(r.toDelete) >= deleteBatch
		var batch []pendingDelete
		if full && r.deletes != nil {
			batch, r.toDelete = r.toDelete, nil
		}
		r.mu.Unlock()
		switch {
		case batch != nil:
			r.deletes <- batch // deleted by the background deleter
		case full:
			_ = r.flushDeletes(ctx)
		}
	}
}

// flushDeletes deletes the written objects gathered so far.
func (r *Run) flushDeletes(ctx context.Context) error {
	r.mu.Lock()
	batch := r.toDelete
	r.toDelete = nil
	r.mu.Unlock()
	return r.deleteKeys(ctx, batch)
}

// deleteKeys deletes written objects: each one whose digest is known only
// while it still holds the bytes that were written (an object rewritten
// since the plan read it holds a message nobody wrote: it stays), the
// others, if any, in one batch.
func (r *Run) deleteKeys(ctx context.Context, batch []pendingDelete) error {
	var keys []string
	var checked []pendingDelete
	for _, pd := range batch {
		if pd.checked {
			checked = append(checked, pd)
		} else {
			keys = append(keys, pd.key)
		}
	}
	errChecked := r.deleteChecked(ctx, checked)
	if err := r.deleteUnchecked(ctx, keys); err != nil {
		return err
	}
	return errChecked
}

// deleteChecked deletes written objects, each only while the MD5 of its
// bytes is the one written, deleteConcurrency at a time.
func (r *Run) deleteChecked(ctx context.Context, batch []pendingDelete) error {
	if len(batch) == 0 {
		return nil
	}
	errs := make([]error, len(batch))
	sem := make(chan struct{}, deleteConcurrency)
	var wg sync.WaitGroup
	for i, pd := range batch {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			errs[i] = archive.RemoveIfDigest(ctx, r.Store, pd.key, pd.sum)
		}()
	}
	wg.Wait()
	left := 0
	for i, err := range errs {
		switch {
		case err == nil || errors.Is(err, archive.ErrNotFound):
			// Deleted, or gone already: nothing is left in place.
		case errors.Is(err, archive.ErrChanged):
			r.Warnf("written but not deleted %s: it was rewritten since it was read, and what it holds now was not written (a re-run writes it)", batch[i].key)
			left++
		default:
			r.Warnf("written but not deleted %s: %v", batch[i].key, err)
			left++
		}
	}
	r.mu.Lock()
	r.Sum.Deleted += len(batch) - left
	r.mu.Unlock()
	if left > 0 {
		what := writtenObjects(left)
		err := fmt.Errorf("%s could not be deleted (a re-run rewrites them harmlessly)", what)
		r.deleteFailed(left, err)
		return err
	}
	return nil
}

// deleteUnchecked deletes written objects whose digest is unknown.
func (r *Run) deleteUnchecked(ctx context.Context, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	failed, err := r.Store.DeleteMany(ctx, keys)
	if err != nil {
		for _, k := range keys {
			r.Warnf("written but not deleted %s: %v", k, err)
		}
		err = fmt.Errorf("deleting %d written objects (they stay in place; a re-run rewrites them harmlessly): %w", len(keys), err)
		r.deleteFailed(len(keys), err)
		return err
	}
	r.mu.Lock()
	r.Sum.Deleted += len(keys) - len(failed)
	r.mu.Unlock()
	if len(failed) > 0 {
		for k, e := range failed {
			r.Warnf("written but not deleted %s: %v", k, e)
		}
		what := writtenObjects(len(failed))
		err := fmt.Errorf("%s could not be deleted (a re-run rewrites them harmlessly)", what)
		r.deleteFailed(len(failed), err)
		return err
	}
	return nil
}

// writtenObjects counts written objects in words: "1 written object",
// "2 written objects".
func writtenObjects(n int) string {
	if n == 1 {
		return "1 written object"
	}
	return fmt.Sprintf("%d written objects", n)
}

// deleteFailed records a delete call that left n written objects in place.
func (r *Run) deleteFailed(n int, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.undeleted += n
	r.delFailures++
	if r.firstDelErr == nil {
		r.firstDelErr = err
	}
}
