package recovery

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/deadletter/deadletter/internal/dla/jsontext"
	"github.com/tidwall/gjson"
)

// Writing a message's granules one by one, with every write constraint,
// and marking a granule failed when its files cannot be written.

// described is what DescribeExecution said of a message's execution.
type described struct {
	called  bool   // it was asked
	times   bool   // the processing times were set from it
	warning string // it failed: the granules are written without them
	err     error  // the context ended (a TransientError)
}

// describe reads the execution's processing times into mc, as
// writeGranulesFromMessage does before the granules.
func (w *Writer) describe(ctx context.Context, arn string, mc *messageContext, now time.Time) described {
	d := described{called: true}
	desc, err := w.SFN.DescribeExecution(ctx, arn)
	switch {
	case err != nil && ctx.Err() != nil:
		d.err = &TransientError{Err: ctx.Err()}
	case err != nil:
		// v21 fails the whole message here with a TypeError; an expired
		// execution (older than the Step Functions retention) would then
		// never be recoverable.
		d.warning = fmt.Sprintf("DescribeExecution %s failed (%v): granules written without processing times", arn, err)
	case !desc.StartDate.IsZero():
		start := desc.StartDate.UTC().Truncate(time.Millisecond)
		end := now
		if !desc.StopDate.IsZero() {
			end = desc.StopDate.UTC().Truncate(time.Millisecond)
		}
		mc.processingStart, mc.processingEnd = &start, &end
		d.times = true
	}
	return d
}

// writeGranules is writeGranulesFromMessage.
func (w *Writer) writeGranules(ctx context.Context, msg Msg, p *Prepared, granules gjson.Result, executionID *int64, now time.Time, res *Result, cache map[string]*int64) error {
	if !granules.IsArray() || granules.Get("#").Int() == 0 {
		return nil
	}
	arn := executionArn(msg)
	var mc *messageContext
	if p != nil && p.mc != nil {
		mc = p.mc
	} else {
		mc = w.messageContext(msg, arn, now)
	}
	var d described
	switch {
	case p != nil && p.mc != nil:
		d = p.described // read ahead, into p.mc
	case w.SFN != nil && arn != "":
		d = w.describe(ctx, arn, mc, now)
	}
	res.DescribeCalled = d.called
	if d.err != nil {
		return d.err
	}
	if d.warning != "" {
		res.Warnings = append(res.Warnings, d.warning)
	}
	res.ProcessingTimes = d.times
	if p == nil || p.mc == nil {
		start, err := workflowStartTime(msg)
		if err != nil {
			return err
		}
		mc.startMs = start
	}

	if b := w.batcher(granules); b != nil {
		return w.writeGranulesBatched(ctx, b, p, granules, mc, executionID, cache, res)
	}
	var errs []error
	i := 0
	granules.ForEach(func(_, g gjson.Result) bool {
		out := GranuleOutcome{GranuleID: jsString(g.Get("granuleId")), Status: mc.status.String()}
		b := p.built(i)
		i++
		if err := w.scoped(ctx, func(w *Writer) error { return w.writeGranule(ctx, g, b, mc, executionID, cache, &out, res) }); err != nil {
			out.Outcome, out.Error = Failed, err.Error()
			errs = append(errs, &GranuleError{GranuleID: out.GranuleID, Err: err})
		}
		res.Granules = append(res.Granules, out)
		return ctx.Err() == nil
	})
	return granulesError(ctx, granules, res, errs)
}

// granulesError is the message's error from its granules' errors.
func granulesError(ctx context.Context, granules gjson.Result, res *Result, errs []error) error {
	if left := int(granules.Get("#").Int()) - len(res.Granules); left > 0 {
		// The context ended between two granules: the message is not done
		// (its other granules were neither written nor published).
		return &TransientError{Err: fmt.Errorf("%d granules not written: %w", left, ctx.Err())}
	}
	if len(errs) == 0 {
		return nil
	}
	agg := &AggregateError{Errors: errs}
	for _, e := range errs {
		if IsTransient(e) {
			return &TransientError{Err: agg}
		}
	}
	return agg
}

// scoped runs fn with a writer whose granule writes are undone afterwards
// when the DB is a GranuleScoper, and with w itself otherwise.
func (w *Writer) scoped(ctx context.Context, fn func(*Writer) error) error {
	gs, ok := w.DB.(GranuleScoper)
	if !ok {
		return fn(w)
	}
	return gs.GranuleScope(ctx, func(db DB) error {
		inner := *w
		inner.DB = db
		return fn(&inner)
	})
}

func (w *Writer) cachedLookup(ctx context.Context, cache map[string]*int64, kind, key string, look func(context.Context, string) (*int64, error)) (*int64, error) {
	if id, ok := cache[kind+"\x00"+key]; ok {
		return id, nil
	}
	id, err := look(ctx, key)
	if err != nil {
		return nil, err
	}
	cache[kind+"\x00"+key] = id
	return id, nil
}

func (w *Writer) writeGranule(ctx context.Context, g gjson.Result, b *builtGranule, mc *messageContext, executionID *int64, cache map[string]*int64, out *GranuleOutcome, res *Result) error {
	gw, err := w.prepareGranule(ctx, g, b, mc, executionID, cache, out, res)
	if err != nil || gw == nil {
		return err
	}
	final := gw.Row.Status == "completed" || gw.Row.Status == "failed"
	var r GranuleResult
	var stored *StoredGranule
	var src RecordSource
	if w.Notifier != nil {
		if src, err = w.recordSource(); err != nil {
			return err
		}
		r, stored, err = src.WriteGranuleRecord(ctx, gw)
	} else {
		r, err = w.DB.WriteGranule(ctx, gw)
	}
	if err != nil {
		return err
	}
	if r.Dropped {
		// v21 neither writes files nor publishes a dropped granule.
		out.Outcome = Dropped
		return nil
	}
	out.Outcome = Written
	if final && gw.WriteFiles {
		if ferr := w.DB.WriteFiles(ctx, r.CumulusID, gw.Row.CollectionID, gw.Files); ferr != nil {
			if err := w.filesFailed(ctx, gw, mc, ferr, out, res); err != nil {
				return err
			}
		}
	}
	if src != nil {
		// The row the upsert returned, even after a files failure marked the
		// granule failed: v21 then publishes twice, the failed row first.
		return w.publishGranule(ctx, src, res, stored)
	}
	return nil
}

// filesFailedHeadline is the Error of the failure Cumulus writes on a
// granule whose files fail.
const filesFailedHeadline = "Failed writing files to PostgreSQL."

// filesFailed follows a failure of a granule's files (ferr): the granule
// is marked failed, as v21 does, unless the database itself failed.
func (w *Writer) filesFailed(ctx context.Context, gw *GranuleWrite, mc *messageContext, ferr error, out *GranuleOutcome, res *Result) error {
	if IsTransient(ferr) {
		return ferr
	}
	errJSON := failureError(mc.workflowError, filesFailedHeadline, ferr.Error())
	if _, err := w.markGranuleFailed(ctx, gw.Row.GranuleID, gw.Row.CollectionID, errJSON, res); err != nil {
		return err
	}
	out.FilesError = ferr.Error()
	return nil
}

// prepareGranule builds a granule's row and makes its lookups. An invalid
// granule is done with here (the cross-collection check, the failed
// mark), as is one whose lookups fail: it returns nil then, with the
// granule's error if any; otherwise the write to send.
// b is the granule built ahead by Prepare (nil: built here).
func (w *Writer) prepareGranule(ctx context.Context, g gjson.Result, b *builtGranule, mc *messageContext, executionID *int64, cache map[string]*int64, out *GranuleOutcome, res *Result) (*GranuleWrite, error) {
	if b == nil {
		b = &builtGranule{}
		b.rec, b.gw, b.err = buildGranule(ctx, g, mc, w.Objects)
		if b.err == nil {
			b.verr = validateGranule(b.rec)
		}
	}
	gw, err := b.gw, b.err
	if err != nil {
		return nil, err
	}
	out.Status = gw.Row.Status
	gw.ExecutionID = executionID
	// translateApiGranuleToPostgresGranule: the lookups by natural key.
	name, version := splitCollectionID(mc.collectionID)
	cid, err := w.cachedLookup(ctx, cache, "collection", mc.collectionID, func(ctx context.Context, _ string) (*int64, error) {
		return w.DB.CollectionID(ctx, name, version)
	})
	if err != nil {
		return nil, err
	}
	if cid == nil {
		return nil, &RecordDoesNotExist{Table: "collections", Key: fmt.Sprintf(`{"name":%s,"version":%s}`, jsonString(name), jsonString(version))}
	}
	gw.Row.CollectionID = *cid
	if pdr := mc.pdrName; truthy(pdr) {
		id, err := w.cachedLookup(ctx, cache, "pdr", jsString(pdr), w.DB.PdrID)
		if err != nil {
			return nil, err
		}
		if id == nil {
			return nil, &RecordDoesNotExist{Table: "pdrs", Key: fmt.Sprintf(`{"name":%s}`, jsonString(jsString(pdr)))}
		}
		gw.Row.PdrID = id
	}
	if p := mc.provider.Get("id"); truthy(p) {
		id, err := w.cachedLookup(ctx, cache, "provider", jsString(p), w.DB.ProviderID)
		if err != nil {
			return nil, err
		}
		if id == nil {
			return nil, &RecordDoesNotExist{Table: "providers", Key: fmt.Sprintf(`{"name":%s}`, jsonString(jsString(p)))}
		}
		gw.Row.ProviderID = id
	}
	final := gw.Row.Status == "completed" || gw.Row.Status == "failed"
	if verr := b.verr; verr != nil {
		// v21 checks another collection's granule_id first; WriteGranule
		// does that check itself for valid records.
		other, err := w.DB.OtherCollection(ctx, gw.Row.GranuleID, *cid)
		if err != nil {
			return nil, err
		}
		if other != "" {
			return nil, OtherCollectionError(gw.Row.GranuleID, mc.collectionID, other)
		}
		if !final {
			return nil, verr
		}
		errJSON := schemaFailureError(mc.workflowError, verr)
		ok, err := w.markGranuleFailed(ctx, gw.Row.GranuleID, *cid, errJSON, res)
		if err != nil {
			return nil, err
		}
		if !ok {
			// updateGranuleStatusToFailed's lookup throws, and that error
			// replaces the schema error.
			return nil, &RecordDoesNotExist{
				Table: "granules", Key: fmt.Sprintf(`{"granule_id":%s,"collection_cumulus_id":%d}`, jsonString(gw.Row.GranuleID), *cid)}
		}
		return nil, &SchemaFailedGranuleError{Cause: verr}
	}
	return gw, nil
}

// markGranuleFailed is updateGranuleStatusToFailed: with a Notifier, the
// updated row is published.
func (w *Writer) markGranuleFailed(ctx context.Context, granuleID string, collectionID int64, errJSON string, res *Result) (bool, error) {
	if w.Notifier == nil {
		return w.DB.MarkGranuleFailed(ctx, granuleID, collectionID, errJSON)
	}
	src, err := w.recordSource()
	if err != nil {
		return false, err
	}
	stored, err := src.MarkGranuleFailedRecord(ctx, granuleID, collectionID, errJSON)
	if err != nil || stored == nil {
		return false, err
	}
	return true, w.publishGranule(ctx, src, res, stored)
}

// failureError is the error Cumulus writes on a granule whose files fail:
// {errors: JSON string of [workflow error (unless empty), {Error, Cause}]},
// the cause a string. (A schema failure's is schemaFailureError.)
func failureError(workflowError, headline, cause string) string {
	var prior []string
	if workflowError != "" && workflowError != "{}" && workflowError != "[]" {
		prior = append(prior, workflowError)
	}
	return errorsColumn(prior, headline, jsontext.QuoteJS(cause))
}

// errorsColumn is {errors: JSON.stringify([...prior, {Error: headline,
// Cause: cause}])}, prior and causeJSON being JSON texts.
func errorsColumn(prior []string, headline, causeJSON string) string {
	items := make([]string, 0, len(prior)+1)
	for _, p := range prior {
		items = append(items, jsStringify(p))
	}
	items = append(items, buildObject([]kv{{"Error", jsontext.QuoteJS(headline)}, {"Cause", causeJSON}}))
	return buildObject([]kv{{"errors", jsontext.QuoteJS("[" + strings.Join(items, ",") + "]")}})
}

// OtherCollectionError is v21's cross-collection granule_id refusal.
func OtherCollectionError(granuleID, collectionID, other string) error {
	return fmt.Errorf("Error: A granule already exists for granuleId: %s with collectionId: %s (it is in collection %s)",
		granuleID, collectionID, other)
}

func splitCollectionID(id string) (name, version string) {
	for i := len(id) - 3; i >= 0; i-- {
		if id[i:i+3] == "___" {
			return id[:i], id[i+3:]
		}
	}
	return id, ""
}
