package recovery

import (
	"context"
	"fmt"

	"github.com/tidwall/gjson"
)

// Writing a message's granules in one batch when the database adapter can
// (GranuleBatcher) and the files of the granules are disjoint.

// batching is the DB as a GranuleBatcher, when it may batch.
func (w *Writer) batching() GranuleBatcher {
	if b, ok := w.DB.(GranuleBatcher); ok && b.Batching(w.DB) {
		return b
	}
	return nil
}

// batcher is the DB's GranuleBatcher when a message's granules can be
// sent at once with the same effect as one after another: not a trial run
// (Batching), and no granule_id listed twice (the second write would read
// the first). With a Notifier, the DB must also batch the writes that
// return rows (RecordBatcher): the notifications are then published after
// every granule is written, in the order the granules are listed, which
// is the order one by one publishes them in; a single granule is batched
// too (its files and its read for the notification go together).
// Without one, a message of one granule is sent as it is.
func (w *Writer) batcher(granules gjson.Result) GranuleBatcher {
	b := w.batching()
	if b == nil {
		return nil
	}
	n := granules.Get("#").Int()
	if w.Notifier != nil {
		if _, ok := b.(RecordBatcher); !ok || n < 1 {
			return nil
		}
	} else if n < 2 {
		return nil
	}
	seen := map[string]bool{}
	distinct := true
	granules.ForEach(func(_, g gjson.Result) bool {
		id := jsString(g.Get("granuleId"))
		distinct = !seen[id]
		seen[id] = true
		return distinct
	})
	if !distinct {
		return nil
	}
	return b
}

// writeGranulesBatched is writeGranules' loop in three steps: each granule
// is built and looked up in order (an invalid one is done with there),
// then every granule write is sent at once, then every granule's files.
// The granule_ids differ, so no write reads another's row: the order of a
// granule's files relative to the next granule's upsert does not change
// what either writes. Files shared by two granules are written granule by
// granule, in order, as the one-by-one loop writes them.
func (w *Writer) writeGranulesBatched(ctx context.Context, b GranuleBatcher, p *Prepared, granules gjson.Result, mc *messageContext, executionID *int64, cache map[string]*int64, res *Result) error {
	n := int(granules.Get("#").Int())
	outs := make([]GranuleOutcome, 0, n)
	errAt := make([]error, 0, n)
	var idx []int // outs index of each write sent
	var gws []*GranuleWrite
	i := 0
	granules.ForEach(func(_, g gjson.Result) bool {
		out := GranuleOutcome{GranuleID: jsString(g.Get("granuleId")), Status: mc.status.String()}
		gw, err := w.prepareGranule(ctx, g, p.built(i), mc, executionID, cache, &out, res)
		i++
		if gw != nil {
			idx, gws = append(idx, len(outs)), append(gws, gw)
		}
		outs, errAt = append(outs, out), append(errAt, err)
		return ctx.Err() == nil
	})
	if ctx.Err() != nil {
		// Nothing is sent: the granules from the first one not written on
		// are not done.
		done := len(outs)
		if len(idx) > 0 {
			done = idx[0]
		}
		outs, errAt = outs[:done], errAt[:done]
		gws = nil
	}
	if rb, ok := b.(RecordBatcher); ok && w.Notifier != nil {
		if err := w.writeGranuleRecordsBatched(ctx, rb, gws, idx, mc, outs, errAt, res); err != nil {
			return err
		}
		return w.granulesDone(ctx, granules, outs, errAt, res)
	}
	results, werrs := b.WriteGranules(ctx, gws)
	var files []FilesWrite
	var filesOf []int // the write of each files entry
	for _, k := range sortWrites(gws, idx, results, werrs, outs, errAt) {
		if fw := filesToWrite(gws[k], results[k]); fw != nil {
			files, filesOf = append(files, *fw), append(filesOf, k)
		}
	}
	if disjointFiles(files) {
		ferrs := b.WriteFilesBatch(ctx, files)
		for j, k := range filesOf {
			if ferrs[j] != nil {
				errAt[idx[k]] = w.filesFailed(ctx, gws[k], mc, ferrs[j], &outs[idx[k]], res)
			}
		}
	} else {
		for j, k := range filesOf {
			if ferr := w.DB.WriteFiles(ctx, files[j].GranuleCumulusID, files[j].CollectionCumulusID, files[j].Files); ferr != nil {
				errAt[idx[k]] = w.filesFailed(ctx, gws[k], mc, ferr, &outs[idx[k]], res)
			}
		}
	}
	return w.granulesDone(ctx, granules, outs, errAt, res)
}

// granulesDone records the granules' outcomes in res and returns the
// message's error from their errors.
func (w *Writer) granulesDone(ctx context.Context, granules gjson.Result, outs []GranuleOutcome, errAt []error, res *Result) error {
	var errs []error
	for i, err := range errAt {
		if err != nil {
			outs[i].Outcome, outs[i].Error = Failed, err.Error()
			errs = append(errs, &GranuleError{GranuleID: outs[i].GranuleID, Err: err})
		}
	}
	res.Granules = append(res.Granules, outs...)
	return granulesError(ctx, granules, res, errs)
}

// writeGranuleRecordsBatched is writeGranule with a Notifier, for every
// granule sent (gws, each the outcome outs[idx[k]]): the upserts returning
// their rows at once, then every written granule's files with the read of
// its notification at once, then the notifications in order. A granule
// whose files fail is marked failed and both its rows published, as one
// by one does; when two granules share a file, the files are written
// granule by granule, as one by one writes them. The error returned is
// the Notifier's (the message cannot go on); a granule's own is in errAt.
func (w *Writer) writeGranuleRecordsBatched(ctx context.Context, rb RecordBatcher, gws []*GranuleWrite, idx []int, mc *messageContext, outs []GranuleOutcome, errAt []error, res *Result) error {
	src, err := w.recordSource()
	if err != nil {
		return err
	}
	results, stored, werrs := rb.WriteGranuleRecords(ctx, gws)
	of := sortWrites(gws, idx, results, werrs, outs, errAt) // the write of each notice
	notices := make([]GranuleNotice, len(of))
	var files []FilesWrite
	for j, k := range of {
		notices[j] = GranuleNotice{Granule: stored[k], Files: filesToWrite(gws[k], results[k])}
		if fw := notices[j].Files; fw != nil {
			files = append(files, *fw)
		}
	}
	if !disjointFiles(files) {
		for j, k := range of {
			n := notices[j]
			if n.Files != nil {
				if ferr := w.DB.WriteFiles(ctx, n.Files.GranuleCumulusID, n.Files.CollectionCumulusID, n.Files.Files); ferr != nil {
					if errAt[idx[k]] = w.filesFailed(ctx, gws[k], mc, ferr, &outs[idx[k]], res); errAt[idx[k]] != nil {
						continue
					}
				}
			}
			errAt[idx[k]] = w.publishGranule(ctx, src, res, n.Granule)
		}
		return nil
	}
	ferrs, cerrs := rb.FilesAndComplete(ctx, notices)
	// The granules whose files failed are marked failed, each then read
	// for its two notifications, all in one round trip. (One by one marks
	// each just before publishing it: when the context ends between two
	// granules, the later ones are marked here and not published; either
	// way they are failed transiently, and the message written again.)
	var marks []FailedMark
	markOf := make([]int, len(of))
	for j, k := range of {
		markOf[j] = -1
		if ferrs[j] != nil && !IsTransient(ferrs[j]) {
			markOf[j] = len(marks)
			row := &gws[k].Row
			marks = append(marks, FailedMark{GranuleID: row.GranuleID, CollectionID: row.CollectionID,
				ErrJSON: failureError(mc.workflowError, filesFailedHeadline, ferrs[j].Error()), Written: notices[j].Granule})
		}
	}
	var marked []MarkedFailed
	if len(marks) > 0 && ctx.Err() == nil {
		marked = rb.MarkGranulesFailed(ctx, marks)
	}
	for j, k := range of {
		g := notices[j].Granule
		if ctx.Err() != nil {
			// The caller gave up between two notifications: this granule
			// is written but not announced, so the message is not done
			// (a transient error: it is written and published again).
			errAt[idx[k]] = &TransientError{Err: fmt.Errorf("granule %s written, not published: %w", g.GranuleID, ctx.Err())}
			continue
		}
		if ferrs[j] != nil {
			if markOf[j] < 0 {
				errAt[idx[k]] = ferrs[j] // transient: nothing is marked
				continue
			}
			// The granule marked failed (that row published), then the
			// row the upsert returned, read again, as one by one does.
			m := marked[markOf[j]]
			if m.Err == nil && m.Failed != nil {
				m.Err = w.publish(ctx, res, TopicGranule, GranuleMessage(m.Failed, res.providers))
			}
			if errAt[idx[k]] = m.Err; m.Err != nil {
				continue
			}
			outs[idx[k]].FilesError = ferrs[j].Error()
			switch {
			case m.WrittenErr != nil:
				errAt[idx[k]] = m.WrittenErr
			case ctx.Err() != nil:
				// Given up between the two: one by one would not have read
				// the row again.
				errAt[idx[k]] = &TransientError{Err: fmt.Errorf("granule %s marked failed, not published again: %w", g.GranuleID, ctx.Err())}
			default:
				errAt[idx[k]] = w.publish(ctx, res, TopicGranule, GranuleMessage(g, res.providers))
			}
			continue
		}
		if cerrs[j] != nil {
			errAt[idx[k]] = cerrs[j]
			continue
		}
		errAt[idx[k]] = w.publish(ctx, res, TopicGranule, GranuleMessage(g, res.providers))
	}
	return nil
}

// sortWrites records the outcome of each write sent (gws, each the
// outcome outs[idx[k]]): its error, dropped, or written. It returns the
// writes that were written, in order.
func sortWrites(gws []*GranuleWrite, idx []int, results []GranuleResult, werrs []error, outs []GranuleOutcome, errAt []error) []int {
	var written []int
	for k := range gws {
		switch {
		case werrs[k] != nil:
			errAt[idx[k]] = werrs[k]
		case results[k].Dropped:
			// v21 neither writes files nor publishes a dropped granule.
			outs[idx[k]].Outcome = Dropped
		default:
			outs[idx[k]].Outcome = Written
			written = append(written, k)
		}
	}
	return written
}

// filesToWrite is the files a written granule writes: those of a final
// granule whose message lists them; nil otherwise.
func filesToWrite(gw *GranuleWrite, r GranuleResult) *FilesWrite {
	if (gw.Row.Status != "completed" && gw.Row.Status != "failed") || !gw.WriteFiles {
		return nil
	}
	return &FilesWrite{GranuleCumulusID: r.CumulusID, CollectionCumulusID: gw.Row.CollectionID, Files: gw.Files}
}

// disjointFiles reports whether no file (bucket and key) belongs to two of
// the granules.
func disjointFiles(files []FilesWrite) bool {
	owner := map[[2]string]int{}
	for i, fw := range files {
		for _, f := range fw.Files {
			if f.Bucket == nil || f.Key == nil {
				continue
			}
			k := [2]string{*f.Bucket, *f.Key}
			if o, ok := owner[k]; ok && o != i {
				return false
			}
			owner[k] = i
		}
	}
	return true
}
