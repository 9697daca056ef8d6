package recovery

import (
	"context"

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
// sent at once with the same effect as one after another: no notifier (its
// publishes follow each write), not a trial run (Batching), and no
// granule_id listed twice (the second write would read the first).
func (w *Writer) batcher(granules gjson.Result) GranuleBatcher {
	b := w.batching()
	if b == nil || w.Notifier != nil || granules.Get("#").Int() < 2 {
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
	results, werrs := b.WriteGranules(ctx, gws)
	var files []FilesWrite
	var filesOf []int // the write of each files entry
	for k, gw := range gws {
		out := &outs[idx[k]]
		switch {
		case werrs[k] != nil:
			errAt[idx[k]] = werrs[k]
			continue
		case results[k].Dropped:
			// v21 neither writes files nor publishes a dropped granule.
			out.Outcome = Dropped
			continue
		}
		out.Outcome = Written
		if (gw.Row.Status == "completed" || gw.Row.Status == "failed") && gw.WriteFiles {
			files, filesOf = append(files, FilesWrite{GranuleCumulusID: results[k].CumulusID, CollectionCumulusID: gw.Row.CollectionID, Files: gw.Files}), append(filesOf, k)
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
