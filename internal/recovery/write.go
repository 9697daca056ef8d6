package recovery

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/dla"
)

// Lookups are the cumulus_ids the requirements gate found.
type Lookups struct {
	Collection, AsyncOperation, Parent *int64
}

// GranuleResult is what the guarded granule upsert did.
type GranuleResult struct {
	CumulusID int64
	Dropped   bool // the write constraints blocked the update
}

// DB is the database side of the writes. Lookups return nil when the row
// does not exist. Every method is one transaction or less; errors of the
// database itself (not of the data) are wrapped in *TransientError.
type DB interface {
	CollectionID(ctx context.Context, name, version string) (*int64, error)
	AsyncOperationID(ctx context.Context, id string) (*int64, error)
	ExecutionID(ctx context.Context, arn string) (*int64, error)
	ProviderID(ctx context.Context, name string) (*int64, error)
	PdrID(ctx context.Context, name string) (*int64, error)
	// UpsertExecution writes the execution (running: only created_at,
	// updated_at, timestamp, original_payload on conflict).
	UpsertExecution(ctx context.Context, r *ExecutionRow) (int64, error)
	// UpsertPdr writes the PDR behind its created_at/progress guard; false
	// when the guard kept the existing row.
	UpsertPdr(ctx context.Context, r *PdrRow) (bool, error)
	// OtherCollection names the collection (name___version) of a granule
	// with this granule_id in another collection, or "".
	OtherCollection(ctx context.Context, granuleID string, collectionID int64) (string, error)
	// WriteGranule runs the guarded upsert and the granules_executions link
	// in one transaction.
	WriteGranule(ctx context.Context, g *GranuleWrite) (GranuleResult, error)
	// MarkGranuleFailed sets status failed and error on an existing granule;
	// false when there is none.
	MarkGranuleFailed(ctx context.Context, granuleID string, collectionID int64, errJSON string) (bool, error)
	// WriteFiles upserts the files on (bucket, key) and removes the
	// granule's other files; on failure the files already written stay.
	WriteFiles(ctx context.Context, granuleCumulusID int64, files []FileRow) error
	// LinkGranules links every granule with one of these granule_ids, in
	// any collection, to the execution.
	LinkGranules(ctx context.Context, granuleIDs []string, executionID int64) error
}

// GranuleScoper is implemented by a DB whose writes are only a trial (the
// dry run's transaction, rolled back at the end). GranuleScope runs fn with
// a DB whose writes are undone when fn returns: each granule is then
// evaluated against the database as it was before the message's granules.
// Without it, a row that every granule of a message rewrites (a file that
// each granule lists, a granule listed many times) gains one row version
// per granule, which PostgreSQL cannot prune before the transaction ends,
// and each rewrite walks all of them: quadratic in the granules.
type GranuleScoper interface {
	GranuleScope(ctx context.Context, fn func(DB) error) error
}

// GranuleBatcher is implemented by a DB that sends many writes in one
// round trip, each still its own transaction, with its own result and
// error, exactly as when sent alone.
type GranuleBatcher interface {
	// Batching reports whether the writer's DB (db) may batch: only when
	// it is this batcher itself, not a wrapper that embeds it to watch
	// its calls (which batching would bypass), and when the writes are not
	// only a trial (a GranuleScoper whose scopes are rolled back).
	Batching(db DB) bool
	// UpsertPdrID is UpsertPdr that also returns the PDR's cumulus_id,
	// written or kept by the guard (nil when unknown), so that the
	// granules need not look it up by name.
	UpsertPdrID(ctx context.Context, r *PdrRow) (bool, *int64, error)
	// WriteGranules is WriteGranule for each write, in order.
	WriteGranules(ctx context.Context, gws []*GranuleWrite) ([]GranuleResult, []error)
	// WriteFilesBatch is WriteFiles for each granule, in order.
	WriteFilesBatch(ctx context.Context, batch []FilesWrite) []error
}

// FilesWrite is one granule's files, for GranuleBatcher.
type FilesWrite struct {
	GranuleCumulusID int64
	Files            []FileRow
}

// Writer is writeRecords with its collaborators.
type Writer struct {
	DB      DB
	SFN     StepFunctions // nil: no processing times, no history
	Objects Objects       // nil: no CMR files, sizes or replace payloads
	Region  string        // for execution URLs; us-east-1 when empty
	Now     func() time.Time
	// Notifier publishes what v21 publishes after each write (notify.go);
	// nil: nothing is published. With one, DB must be a RecordSource.
	Notifier Notifier
	// Unbatched sends every statement alone, even to a GranuleBatcher:
	// the benchmark's baseline (dla recover --x-no-batch).
	Unbatched bool
	// NoMsgIndex reads each message with gjson alone (Unindexed): the
	// benchmark's baseline (dla recover --x-no-msg-index).
	NoMsgIndex bool
}

// Outcome of one record.
const (
	Written = "written"
	Dropped = "dropped"
	Failed  = "failed"
	Skipped = "skipped" // disabled by sf_event_sqs_to_db_records_types
)

// GranuleOutcome is one granule's result.
type GranuleOutcome struct {
	GranuleID string `json:"granule_id"`
	Status    string `json:"status,omitempty"`
	Outcome   string `json:"outcome"`
	Error     string `json:"error,omitempty"`
	// FilesError: the files could not be written; the granule was marked
	// failed and the message still counts as written, as in v21.
	FilesError string `json:"files_error,omitempty"`
}

// Result is what writing one message did.
type Result struct {
	ExecutionArn     string           `json:"execution_arn,omitempty"`
	Status           string           `json:"status,omitempty"`
	Execution        string           `json:"execution"`
	Pdr              string           `json:"pdr,omitempty"`
	PdrName          string           `json:"pdr_name,omitempty"`
	Granules         []GranuleOutcome `json:"granules,omitempty"`
	ProcessingTimes  bool             `json:"processing_times"`
	DescribeCalled   bool             `json:"-"`
	Warnings         []string         `json:"warnings,omitempty"`
	GranuleLinksOnly bool             `json:"granule_links_only,omitempty"`
	// Published counts the notifications published (nil without a
	// Notifier, or when none was).
	Published *PublishCounts `json:"published,omitempty"`
	// providers go first in each record published (v22.1.1 and later).
	providers *Providers
}

// Outcome sums the result up: dropped when every write was dropped.
func (r *Result) Outcome() string {
	if r.Execution == Written || r.Pdr == Written {
		return Written
	}
	dropped := false
	for _, g := range r.Granules {
		switch g.Outcome {
		case Written:
			return Written
		case Dropped:
			dropped = true
		}
	}
	if dropped {
		return Dropped
	}
	return Written
}

// writeFlags reads which record types to write.
func writeFlags(msg Getter) (execution, pdr, granule bool) {
	if truthy(msg.Get("meta.reportMessageSource")) {
		return true, true, true
	}
	wf, st := msg.Get("meta.workflow_name"), msg.Get("meta.status")
	if isNil(wf) || isNil(st) {
		return true, true, true
	}
	types := msg.Get("cumulus_meta.sf_event_sqs_to_db_records_types").Get(gjsonEscape(jsString(wf))).Get(gjsonEscape(jsString(st)))
	if !types.IsArray() {
		return true, true, true
	}
	types.ForEach(func(_, t gjson.Result) bool {
		switch t.String() {
		case "execution":
			execution = true
		case "pdr":
			pdr = true
		case "granule":
			granule = true
		}
		return true
	})
	return
}

var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

func (w *Writer) now() time.Time {
	if w.Now != nil {
		return w.Now().UTC()
	}
	return time.Now().UTC()
}

// Write is writeRecords: the write flags, the lookups and the requirements
// gate, the execution, the provider, the PDR, then the granules (or only
// the granule-execution links). Writes are not one transaction: what was
// written stays when a later step fails, as in v21; the upserts make a
// re-run safe.
func (w *Writer) Write(ctx context.Context, msg gjson.Result) (*Result, error) {
	return w.WriteMsg(ctx, w.Index(msg), nil)
}

// WriteDecoded unwraps a decoded archive object or queue message to its
// Cumulus message and writes it, as Cumulus's sfEventSqsToDbRecords does:
// the one way in of `dla recover` and the db-writer processor. The message
// is nil when unwrapping failed, the result when nothing was attempted.
func (w *Writer) WriteDecoded(ctx context.Context, d *dla.Decoded) (*Message, *Result, error) {
	msg, err := Unwrap(ctx, d, w.SFN, w.Objects)
	if err != nil {
		return nil, nil, err
	}
	res, err := w.WriteMsg(ctx, w.Index(msg.JSON), nil)
	return msg, res, err
}

// Index is Index(msg), or Unindexed(msg) with NoMsgIndex.
func (w *Writer) Index(msg gjson.Result) Msg {
	if w.NoMsgIndex {
		return Unindexed(msg)
	}
	return Index(msg)
}

// WriteMsg is Write of a message indexed already (Index, Unindexed), and
// prepared by Prepare (p nil: not prepared).
func (w *Writer) WriteMsg(ctx context.Context, msg Msg, p *Prepared) (*Result, error) {
	res := &Result{ExecutionArn: executionArn(msg), Status: msg.Get("meta.status").String(), Execution: Skipped}
	if !msg.IsObject() {
		return res, &UnwrapError{Reason: "the message is not a JSON object"}
	}
	doExec, doPdr, doGranules := writeFlags(msg)
	var src RecordSource
	if w.Notifier != nil {
		var err error
		if src, err = w.recordSource(); err != nil {
			return res, err
		}
	}

	coll := msg.Get("meta.collection")
	cname, cversion := coll.Get("name"), coll.Get("version")
	hasColl := truthy(cname) && truthy(cversion)
	asyncID := msg.Get("cumulus_meta.asyncOperationId")
	parentArn := msg.Get("cumulus_meta.parentExecutionArn")

	var ids Lookups
	var missing []string
	var err error
	if hasColl {
		if ids.Collection, err = w.DB.CollectionID(ctx, jsString(cname), jsString(cversion)); err != nil {
			return res, err
		}
		if ids.Collection == nil {
			missing = append(missing, "collection "+jsString(cname)+"___"+jsString(cversion))
		}
	}
	if !isNil(asyncID) {
		if !uuidRE.MatchString(jsString(asyncID)) {
			return res, &MessageError{Reason: fmt.Sprintf("cumulus_meta.asyncOperationId %s is not a UUID", asyncID.Raw)}
		}
		if ids.AsyncOperation, err = w.DB.AsyncOperationID(ctx, jsString(asyncID)); err != nil {
			return res, err
		}
		if ids.AsyncOperation == nil {
			missing = append(missing, "async operation "+jsString(asyncID))
		}
	}
	if !isNil(parentArn) {
		if ids.Parent, err = w.DB.ExecutionID(ctx, jsString(parentArn)); err != nil {
			return res, err
		}
		if ids.Parent == nil {
			missing = append(missing, "parent execution "+jsString(parentArn))
		}
	}
	if len(missing) > 0 {
		return res, &UnmetRequirementsError{Missing: missing}
	}

	if ps, ok := w.DB.(ProviderSource); ok && src != nil {
		if res.providers, err = ps.CollectionProviders(ctx, ids.Collection); err != nil {
			return res, err
		}
	}
	now := w.now()
	if p != nil {
		now = p.now
	}
	// cache holds the message's lookups by natural key (writeGranule's).
	cache := map[string]*int64{}
	var executionID *int64
	if doExec {
		row, err := BuildExecution(msg, now, w.Region, ids)
		if err != nil {
			return res, err
		}
		var id int64
		var stored *StoredExecution
		if src != nil {
			id, stored, err = src.UpsertExecutionRecord(ctx, row)
		} else {
			id, err = w.DB.UpsertExecution(ctx, row)
		}
		if err != nil {
			return res, err
		}
		executionID = &id
		res.Execution = Written
		if src != nil {
			// v21 publishes the translated RETURNING row; a failure fails
			// the message although the execution is committed.
			if err := w.publish(ctx, res, TopicExecution, res.providers.Prefix(ExecutionRecord(stored))); err != nil {
				return res, err
			}
		}
	}

	var providerID *int64
	if pid := msg.Get("meta.provider.id"); !isNil(pid) {
		if providerID, err = w.DB.ProviderID(ctx, jsString(pid)); err != nil {
			return res, err
		}
	}

	if doPdr {
		row, err := BuildPdr(msg, now, ids.Collection, providerID, executionID)
		if err != nil {
			return res, err
		}
		if row != nil {
			res.PdrName = row.Name
			var ok bool
			var stored *StoredPdr
			b := w.batching()
			switch {
			case src != nil:
				ok, stored, err = src.UpsertPdrRecord(ctx, row)
			case b != nil:
				var id *int64
				if ok, id, err = b.UpsertPdrID(ctx, row); id != nil {
					// What the granules' lookup by name would find.
					cache["pdr\x00"+row.Name] = id
				}
			default:
				ok, err = w.DB.UpsertPdr(ctx, row)
			}
			if err != nil {
				return res, err
			}
			res.Pdr = Dropped
			if ok {
				res.Pdr = Written
			}
			if src != nil {
				// v21 publishes the PDR whether the guard let the update
				// through or kept the existing row (re-read by name).
				if err := w.publish(ctx, res, TopicPdr, res.providers.Prefix(PdrRecord(stored, w.Region))); err != nil {
					return res, err
				}
			}
		}
	} else if truthy(msg.Get("payload.pdr")) {
		res.Pdr = Skipped
	}

	granules := msg.Get("payload.granules")
	if doGranules {
		return res, w.writeGranules(ctx, msg, p, granules, executionID, now, res, cache)
	}
	if executionID != nil && granules.IsArray() {
		var gids []string
		granules.ForEach(func(_, g gjson.Result) bool {
			if v := g.Get("granuleId"); v.Type == gjson.String {
				gids = append(gids, v.Str)
			}
			return true
		})
		res.GranuleLinksOnly = true
		if len(gids) > 0 {
			if err := w.DB.LinkGranules(ctx, gids, *executionID); err != nil {
				return res, err
			}
		}
	}
	return res, nil
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
	if w.SFN != nil && arn != "" {
		res.DescribeCalled = true
		desc, err := w.SFN.DescribeExecution(ctx, arn)
		switch {
		case err != nil && ctx.Err() != nil:
			return &TransientError{Err: ctx.Err()}
		case err != nil:
			// v21 fails the whole message here with a TypeError; an expired
			// execution (older than the Step Functions retention) would then
			// never be recoverable.
			res.Warnings = append(res.Warnings, fmt.Sprintf("DescribeExecution %s failed (%v): granules written without processing times", arn, err))
		case !desc.StartDate.IsZero():
			start := desc.StartDate.UTC().Truncate(time.Millisecond)
			end := now
			if !desc.StopDate.IsZero() {
				end = desc.StopDate.UTC().Truncate(time.Millisecond)
			}
			mc.processingStart, mc.processingEnd = &start, &end
			res.ProcessingTimes = true
		}
	}
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
		if ferr := w.DB.WriteFiles(ctx, r.CumulusID, gw.Files); ferr != nil {
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

// filesFailed follows a failure of a granule's files (ferr): the granule
// is marked failed, as v21 does, unless the database itself failed.
func (w *Writer) filesFailed(ctx context.Context, gw *GranuleWrite, mc *messageContext, ferr error, out *GranuleOutcome, res *Result) error {
	if IsTransient(ferr) {
		return ferr
	}
	errJSON := failureError(mc.workflowError, "Failed writing files to PostgreSQL.", ferr.Error())
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
	return errorsColumn(prior, headline, dla.QuoteJS(cause))
}

// errorsColumn is {errors: JSON.stringify([...prior, {Error: headline,
// Cause: cause}])}, prior and causeJSON being JSON texts.
func errorsColumn(prior []string, headline, causeJSON string) string {
	items := make([]string, 0, len(prior)+1)
	for _, p := range prior {
		items = append(items, jsStringify(p))
	}
	items = append(items, buildObject([]kv{{"Error", dla.QuoteJS(headline)}, {"Cause", causeJSON}}))
	return buildObject([]kv{{"errors", dla.QuoteJS("[" + strings.Join(items, ",") + "]")}})
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

// batching is the DB as a GranuleBatcher, when it may batch.
func (w *Writer) batching() GranuleBatcher {
	if b, ok := w.DB.(GranuleBatcher); ok && !w.Unbatched && b.Batching(w.DB) {
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
			files, filesOf = append(files, FilesWrite{GranuleCumulusID: results[k].CumulusID, Files: gw.Files}), append(filesOf, k)
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
			if ferr := w.DB.WriteFiles(ctx, files[j].GranuleCumulusID, files[j].Files); ferr != nil {
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

// messageContext is what every granule of a message reads of it, but the
// start time and the processing times.
func (w *Writer) messageContext(msg Getter, arn string, now time.Time) *messageContext {
	mc := &messageContext{
		provider:      msg.Get("meta.provider"),
		workflowError: parseException(msg.Get("exception")),
		status:        msg.Get("meta.status"),
		pdrName:       msg.Get("payload.pdr.name"),
		queryFields:   msg.Get("meta.granule.queryFields"),
		executionURL:  executionURL(arn, w.Region),
		now:           now,
	}
	// The granules and files are indexed when the message was (it was
	// then found valid JSON, with no key listed twice at its top).
	if m, ok := msg.(Msg); ok && m.idx != nil {
		mc.index = true
	}
	if mc.provider.IsObject() {
		mc.providerURL, mc.providerURLErr = buildURL(mc.provider)
	}
	coll := msg.Get("meta.collection")
	if n, v := coll.Get("name"), coll.Get("version"); truthy(n) && truthy(v) {
		mc.collectionID = jsString(n) + "___" + jsString(v)
	}
	return mc
}

// Prepared is a message's granules built ahead of its writes (Prepare).
type Prepared struct {
	now      time.Time
	mc       *messageContext // nil: nothing was built ahead
	granules []builtGranule
}

// builtGranule is buildGranule's result, and the schema check's.
type builtGranule struct {
	rec  []kv
	gw   *GranuleWrite
	err  error
	verr *SchemaValidationError // validateGranule(rec), when err is nil
}

// built is the i-th granule built ahead, or nil.
func (p *Prepared) built(i int) *builtGranule {
	if p == nil || i >= len(p.granules) {
		return nil
	}
	return &p.granules[i]
}

// Prepare does ahead of WriteMsg what does not read the database: the
// clock, and each granule's row, files and schema check, which WriteMsg
// then takes in place of building them between its lookups and writes
// (their errors too, met where they were met before). It builds nothing
// when the Writer reads AWS (SFN or Objects: the processing times, CMR
// files and file sizes are read in order, as before), or when the message
// would fail before its granules; WriteMsg then builds them itself.
func (w *Writer) Prepare(ctx context.Context, msg Msg) *Prepared {
	p := &Prepared{now: w.now()}
	if w.SFN != nil || w.Objects != nil {
		return p
	}
	granules := msg.Get("payload.granules")
	if !granules.IsArray() {
		return p
	}
	start, err := workflowStartTime(msg)
	if err != nil {
		return p
	}
	mc := w.messageContext(msg, executionArn(msg), p.now)
	mc.startMs = start
	granules.ForEach(func(_, g gjson.Result) bool {
		var b builtGranule
		b.rec, b.gw, b.err = buildGranule(ctx, g, mc, nil)
		if b.err == nil {
			b.verr = validateGranule(b.rec)
		}
		p.granules = append(p.granules, b)
		return true
	})
	p.mc = mc
	return p
}
