package recovery

import (
	"context"
	"fmt"
	"regexp"
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
	// The granule is named by its cumulus_id and its collection's (v22's
	// primary key is both).
	WriteFiles(ctx context.Context, granuleCumulusID, collectionCumulusID int64, files []FileRow) error
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

// ExecutionPdrBatcher is a GranuleBatcher that also writes a message's
// execution and then its PDR in one round trip, each still its own
// transaction: the PDR only once the execution is written, with the
// execution's cumulus_id, as when written one after the other.
type ExecutionPdrBatcher interface {
	GranuleBatcher
	// KnownProviderID is what ProviderID would return without a query (nil:
	// it would ask the database).
	KnownProviderID(name string) *int64
	// UpsertExecutionThenPdr is UpsertExecution of e, then UpsertPdrID of
	// p, whose ExecutionID is the execution's whatever it holds.
	UpsertExecutionThenPdr(ctx context.Context, e *ExecutionRow, p *PdrRow) ExecutionThenPdr
}

// ExecutionThenPdr is what UpsertExecutionThenPdr did.
type ExecutionThenPdr struct {
	ExecutionID  int64
	ExecutionErr error
	// PdrTried is false when the PDR was not written (it was refused after
	// a failed execution, or is left for the caller to write, as before).
	PdrTried   bool
	PdrWritten bool   // false: the guard kept the row
	PdrID      *int64 // the PDR's cumulus_id, written or kept (nil: unknown)
	PdrErr     error
}

// RecordBatcher is a GranuleBatcher that also batches the writes a
// Notifier needs (RecordSource's): the granule upserts returning their
// rows, then each granule's files with the read of what its notification
// holds, each statement still its own transaction with its own result.
type RecordBatcher interface {
	GranuleBatcher
	// WriteGranuleRecords is WriteGranuleRecord for each write, in order.
	WriteGranuleRecords(ctx context.Context, gws []*GranuleWrite) ([]GranuleResult, []*StoredGranule, []error)
	// FilesAndComplete writes each notice's files (when it has them), then
	// reads its granule as CompleteGranule does, in order. A notice whose
	// files fail is not completed (its error is in filesErrs, and the
	// granule is to be read again once its failure is handled).
	FilesAndComplete(ctx context.Context, notices []GranuleNotice) (filesErrs, completeErrs []error)
	// MarkGranulesFailed is, for each mark in order, MarkGranuleFailedRecord
	// and then CompleteGranule of the row it returned and of the mark's
	// Written row, as they read after the update.
	MarkGranulesFailed(ctx context.Context, marks []FailedMark) []MarkedFailed
}

// FailedMark is a granule whose files failed, for
// RecordBatcher.MarkGranulesFailed: marked failed with ErrJSON, and
// Written, the row its upsert returned, completed after the mark.
type FailedMark struct {
	GranuleID    string
	CollectionID int64
	ErrJSON      string
	Written      *StoredGranule
}

// MarkedFailed is what MarkGranulesFailed did with one mark: the row the
// update returned, completed (nil: no such granule), or the error of the
// update or of that read (Err); then the error of the read of the
// mark's Written row (WrittenErr).
type MarkedFailed struct {
	Failed     *StoredGranule
	Err        error
	WrittenErr error
}

// GranuleNotice is a written granule for RecordBatcher.FilesAndComplete:
// its files to write (nil: none), and its row, completed there.
type GranuleNotice struct {
	Files   *FilesWrite
	Granule *StoredGranule
}

// FilesWrite is one granule's files, for GranuleBatcher.
type FilesWrite struct {
	GranuleCumulusID    int64
	CollectionCumulusID int64
	Files               []FileRow
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
	return w.WriteMsg(ctx, Index(msg), nil)
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
	res, err := w.WriteMsg(ctx, Index(msg.JSON), nil)
	return msg, res, err
}

// WriteMsg is Write of a message indexed already (Index), and
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
	// withPdr is the PDR row written with the execution, and what was
	// done (nil: the PDR is written after, on its own).
	var withPdr *PdrRow
	var ep ExecutionThenPdr
	if doExec {
		row, err := BuildExecution(msg, now, w.Region, ids)
		if err != nil {
			return res, err
		}
		var id int64
		var stored *StoredExecution
		eb, pdrRow := w.pdrWithExecution(msg, doPdr, now, ids.Collection)
		switch {
		case pdrRow != nil:
			ep = eb.UpsertExecutionThenPdr(ctx, row, pdrRow)
			id, err = ep.ExecutionID, ep.ExecutionErr
			if ep.PdrTried {
				withPdr = pdrRow
			}
		case src != nil:
			id, stored, err = src.UpsertExecutionRecord(ctx, row)
		default:
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
	if pid := msg.Get("meta.provider.id"); !isNil(pid) && withPdr == nil {
		if providerID, err = w.DB.ProviderID(ctx, jsString(pid)); err != nil {
			return res, err
		}
	}

	if doPdr {
		row := withPdr
		if row == nil {
			if row, err = BuildPdr(msg, now, ids.Collection, providerID, executionID); err != nil {
				return res, err
			}
		}
		if row != nil {
			res.PdrName = row.Name
			var ok bool
			var stored *StoredPdr
			b := w.batching()
			switch {
			case withPdr != nil:
				ok, err = ep.PdrWritten, ep.PdrErr
				if ep.PdrID != nil {
					cache["pdr\x00"+row.Name] = ep.PdrID
				}
			case src != nil:
				if ok, stored, err = src.UpsertPdrRecord(ctx, row); stored != nil && stored.CumulusID != nil {
					cache["pdr\x00"+row.Name] = stored.CumulusID
				}
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

// pdrWithExecution is the DB as an ExecutionPdrBatcher and the message's
// PDR row, when the PDR can go with the execution: batching, a PDR to
// write whose row builds (a collection, a provider known without a query:
// the lookup is not moved before the execution), and no notifications.
// Otherwise nil, and the PDR is written after the execution, as before.
// With notifications the execution's is published between the two, and
// its failure (a record SNS refuses, over 256 KiB) must leave the PDR
// unwritten, as in v21, which publishes before it returns the execution.
func (w *Writer) pdrWithExecution(msg Msg, doPdr bool, now time.Time, collection *int64) (ExecutionPdrBatcher, *PdrRow) {
	if !doPdr || w.Notifier != nil {
		return nil, nil
	}
	eb, ok := w.batching().(ExecutionPdrBatcher)
	if !ok {
		return nil, nil
	}
	pid := msg.Get("meta.provider.id")
	if isNil(pid) {
		return nil, nil
	}
	providerID := eb.KnownProviderID(jsString(pid))
	if providerID == nil {
		return nil, nil
	}
	var fromExecution int64 // the execution's, set by the DB
	row, err := BuildPdr(msg, now, collection, providerID, &fromExecution)
	if err != nil || row == nil {
		return nil, nil
	}
	return eb, row
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
