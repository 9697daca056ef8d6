package recovery

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/dla/jsontext"
)

// SNS notifications, as Cumulus v21 publishes them after each write
// (packages/api/lib/publishSnsMessageUtils.js): the execution and the PDR
// as their API records, a granule as {"event":"Update","record":<API
// granule with its files>}. The records are translated from the rows the
// database returned (the upsert's RETURNING, or the row re-read when a
// guard kept it), as v21's translatePostgres*ToApi* do, so a late
// "running" message publishes the status the row really has.

// Topic is one of the three notification topics; its value is v21's
// dataType, the prefix of the topic's environment variable
// (<topic>_sns_topic_arn).
type Topic string

const (
	TopicExecution Topic = "execution"
	TopicGranule   Topic = "granule"
	TopicPdr       Topic = "pdr"
)

// Topics are the three topics in the order the summaries list them.
var Topics = []Topic{TopicExecution, TopicGranule, TopicPdr}

// EnvVar is v21's environment variable holding the topic's ARN.
func (t Topic) EnvVar() string { return string(t) + "_sns_topic_arn" }

// Notifier publishes one notification: message is the JSON text v21 sends
// as the SNS Message. An error means it was not published (after the
// publisher's own retries).
type Notifier interface {
	Publish(ctx context.Context, topic Topic, message []byte) error
}

// DiscardNotifier publishes nothing: a dry run's Notifier, so that the
// notifications are still built and counted. It fails only where Check
// (the real Notifier's, when it is a Checker) says the notification would
// be refused whatever the service does.
type DiscardNotifier struct {
	Check func(topic Topic, message []byte) error
}

func (d DiscardNotifier) Publish(_ context.Context, topic Topic, message []byte) error {
	if d.Check != nil {
		return d.Check(topic, message)
	}
	return nil
}

// Checker is a Notifier that can tell, without publishing, that it would
// refuse a notification (its error wraps ErrNotificationRejected), so
// that a dry run fails what the run will fail.
type Checker interface {
	Check(topic Topic, message []byte) error
}

// PublishError: a write was committed but its notification could not be
// published. The Writer returns it inside a TransientError: v21 throws
// too (the message goes to the DLQ); recover leaves the object where it
// is, like any AWS failure, and a re-run writes again (the upserts are
// idempotent) and publishes.
type PublishError struct {
	Topic Topic
	Err   error
}

func (e *PublishError) Error() string {
	return fmt.Sprintf("publishing the %s notification: %v", e.Topic, e.Err)
}
func (e *PublishError) Unwrap() error { return e.Err }

// ErrNotificationRejected is wrapped by a Notifier's error when the
// notification itself can never be published (SNS: larger than its 256 KiB
// limit), whatever the retries, as opposed to a topic or a service that
// fails. The message then fails, as in v21 (its object goes to
// failed-sqs/, never deleted), instead of stopping the run as an outage
// would: a re-run would stop at it again, and never reach what follows it.
var ErrNotificationRejected = errors.New("the notification is refused for what it holds")

// IsPublishError reports whether err (or an error it wraps) is a
// PublishError.
func IsPublishError(err error) bool {
	var pe *PublishError
	return errors.As(err, &pe)
}

// RecordSource is implemented by a DB that returns the rows its writes
// left, which a Writer with a Notifier needs. Each method is the DB method
// of the same name without "Record", with the same guards and semantics.
type RecordSource interface {
	// UpsertExecutionRecord returns the row the upsert left (RETURNING).
	UpsertExecutionRecord(ctx context.Context, r *ExecutionRow) (int64, *StoredExecution, error)
	// UpsertPdrRecord returns the row the upsert left, or the existing row
	// re-read by name when the guard kept it (written false).
	UpsertPdrRecord(ctx context.Context, r *PdrRow) (written bool, pdr *StoredPdr, err error)
	// WriteGranuleRecord returns the row the upsert left; nil when dropped.
	WriteGranuleRecord(ctx context.Context, g *GranuleWrite) (GranuleResult, *StoredGranule, error)
	// MarkGranuleFailedRecord returns the updated row; nil when there is
	// no such granule.
	MarkGranuleFailedRecord(ctx context.Context, granuleID string, collectionID int64, errJSON string) (*StoredGranule, error)
	// CompleteGranule reads what translatePostgresGranuleToApiGranule reads
	// besides the row: the collection, the files, the most recent
	// execution's URL, the PDR's and the provider's names.
	CompleteGranule(ctx context.Context, g *StoredGranule) error
}

// StoredExecution is an executions row with its references by natural key
// (what translatePostgresExecutionToApiExecution reads).
type StoredExecution struct {
	Arn, Status                                 string
	URL, CumulusVersion, WorkflowName           *string
	Tasks, Error, OriginalPayload, FinalPayload string // JSON texts; "" = NULL
	Duration                                    *float32
	Archived                                    bool
	CreatedAt, UpdatedAt                        time.Time
	Timestamp                                   *time.Time
	CollectionID, AsyncOperationID, ParentArn   *string
}

// StoredPdr is a pdrs row with its references by natural key.
type StoredPdr struct {
	// CumulusID is the row's, for the granules' lookup of the PDR by name
	// (not part of the record).
	CumulusID                        *int64
	Name, Status                     string
	CollectionID                     string // name___version
	Provider, ExecutionArn           *string
	Progress, Duration               *float32
	PANSent                          *bool
	PANMessage, Address, OriginalURL *string
	Stats                            string // JSON; "" = NULL
	CreatedAt, UpdatedAt             time.Time
	Timestamp                        *time.Time
}

// StoredGranule is a granules row; the fields after the row's are filled
// by CompleteGranule.
type StoredGranule struct {
	CumulusID                                 int64
	GranuleID, Status                         string
	ProducerGranuleID                         *string
	CollectionCumulusID                       int64
	PdrCumulusID, ProviderCumulusID           *int64
	Archived                                  bool
	Published                                 *bool
	Duration, TimeToArchive, TimeToProcess    *float32
	ProductVolume                             *string // bigint, as node-postgres returns it
	Error, QueryFields                        string  // JSON; "" = NULL
	CmrLink                                   *string
	Beginning, Ending, Production, LastUpdate *time.Time
	ProcessingStart, ProcessingEnd            *time.Time
	CreatedAt, UpdatedAt, Timestamp           *time.Time

	CollectionID      string // name___version
	PdrName, Provider *string
	ExecutionURL      *string // of the granule's most recent execution
	Files             []StoredFile
}

// StoredFile is a files row.
type StoredFile struct {
	Bucket, Key                                         string
	ChecksumValue, ChecksumType, FileName, Source, Type *string
	Size                                                *int64
}

// apiObject builds an API record: removeNilProperties drops the nil
// fields; the others keep their order (JSON.stringify keeps insertion
// order).
type apiObject struct{ fields []kv }

func (o *apiObject) raw(key, raw string) {
	if raw != "" {
		o.fields = append(o.fields, kv{key, raw})
	}
}
func (o *apiObject) str(key string, s *string) {
	if s != nil {
		o.raw(key, jsonString(*s))
	}
}
func (o *apiObject) text(key, s string) { o.raw(key, jsonString(s)) }
func (o *apiObject) json(key, s string) {
	if s != "" {
		o.raw(key, jsJSON(s))
	}
}
func (o *apiObject) real(key string, f *float32) {
	if f != nil {
		o.raw(key, jsontext.JSNumber(float4(*f)))
	}
}
func (o *apiObject) boolean(key string, b *bool) {
	if b != nil {
		o.raw(key, strconv.FormatBool(*b))
	}
}
func (o *apiObject) ms(key string, t *time.Time) {
	if t != nil {
		o.raw(key, strconv.FormatInt(t.UnixMilli(), 10))
	}
}
func (o *apiObject) iso(key string, t *time.Time) {
	if t != nil {
		o.raw(key, jsonString(isoMillis(*t)))
	}
}
func (o *apiObject) String() string { return buildObject(o.fields) }

// float4 is the value node-postgres gives for a real column: PostgreSQL
// prints the shortest decimal that reads back as the same float4, and
// parseFloat reads that decimal as a double.
func float4(f float32) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(float64(f), 'g', -1, 32), 64)
	return v
}

// jsJSON is JSON.stringify(JSON.parse(raw)) for a jsonb column's text, as
// node-postgres and v21 turn it around: no white space, and numbers as
// JavaScript writes doubles (1.50 → 1.5, 1e2 → 100). Key order and string
// escapes are PostgreSQL's, which are JavaScript's.
func jsJSON(raw string) string {
	if !gjson.Valid(raw) {
		return compact(raw)
	}
	return jsStringify(raw)
}

func timePtr(t time.Time) *time.Time { return &t }

// ExecutionRecord is translatePostgresExecutionToApiExecution: the
// execution notification.
func ExecutionRecord(e *StoredExecution) []byte {
	var o apiObject
	name := e.Arn
	if i := strings.LastIndex(name, ":"); i >= 0 {
		name = name[i+1:]
	}
	o.text("name", name)
	o.text("status", e.Status)
	o.text("arn", e.Arn)
	o.real("duration", e.Duration)
	o.json("error", e.Error)
	o.json("tasks", e.Tasks)
	o.json("originalPayload", e.OriginalPayload)
	o.json("finalPayload", e.FinalPayload)
	o.str("type", e.WorkflowName)
	o.str("execution", e.URL)
	o.str("cumulusVersion", e.CumulusVersion)
	o.str("asyncOperationId", e.AsyncOperationID)
	o.str("collectionId", e.CollectionID)
	o.str("parentArn", e.ParentArn)
	o.raw("archived", strconv.FormatBool(e.Archived))
	o.ms("createdAt", timePtr(e.CreatedAt))
	o.ms("updatedAt", timePtr(e.UpdatedAt))
	o.ms("timestamp", e.Timestamp)
	return []byte(o.String())
}

// PdrRecord is translatePostgresPdrToApiPdr: the PDR notification. region
// builds the execution URL (getExecutionUrlFromArn).
func PdrRecord(p *StoredPdr, region string) []byte {
	var o apiObject
	o.text("pdrName", p.Name)
	o.str("provider", p.Provider)
	o.text("collectionId", p.CollectionID)
	o.text("status", p.Status)
	o.ms("createdAt", timePtr(p.CreatedAt))
	o.real("progress", p.Progress)
	if p.ExecutionArn != nil && *p.ExecutionArn != "" {
		o.text("execution", executionURL(*p.ExecutionArn, region))
	}
	o.boolean("PANSent", p.PANSent)
	o.str("PANmessage", p.PANMessage)
	o.json("stats", p.Stats)
	o.str("address", p.Address)
	o.str("originalUrl", p.OriginalURL)
	o.ms("timestamp", p.Timestamp)
	o.real("duration", p.Duration)
	o.ms("updatedAt", timePtr(p.UpdatedAt))
	return []byte(o.String())
}

// GranuleRecord is translatePostgresGranuleToApiGranule.
func GranuleRecord(g *StoredGranule) []byte {
	var o apiObject
	o.raw("archived", strconv.FormatBool(g.Archived))
	o.iso("beginningDateTime", g.Beginning)
	o.str("cmrLink", g.CmrLink)
	o.text("collectionId", g.CollectionID)
	o.ms("createdAt", g.CreatedAt)
	o.real("duration", g.Duration)
	o.iso("endingDateTime", g.Ending)
	o.json("error", g.Error)
	o.str("execution", g.ExecutionURL)
	files := make([]string, len(g.Files))
	for i, f := range g.Files {
		var fo apiObject
		fo.text("bucket", f.Bucket)
		fo.str("checksum", f.ChecksumValue)
		fo.str("checksumType", f.ChecksumType)
		fo.str("fileName", f.FileName)
		fo.text("key", f.Key)
		// file_size ? parseInt(file_size) : undefined, on the bigint's text:
		// "0" is a non-empty string, so 0 is kept.
		if f.Size != nil {
			fo.raw("size", strconv.FormatInt(*f.Size, 10))
		}
		fo.str("source", f.Source)
		fo.str("type", f.Type)
		files[i] = fo.String()
	}
	o.raw("files", "["+strings.Join(files, ",")+"]")
	o.text("granuleId", g.GranuleID)
	o.iso("lastUpdateDateTime", g.LastUpdate)
	o.str("pdrName", g.PdrName)
	o.iso("processingEndDateTime", g.ProcessingEnd)
	o.iso("processingStartDateTime", g.ProcessingStart)
	o.str("producerGranuleId", g.ProducerGranuleID)
	o.iso("productionDateTime", g.Production)
	o.str("productVolume", g.ProductVolume)
	o.str("provider", g.Provider)
	o.boolean("published", g.Published)
	o.json("queryFields", g.QueryFields)
	o.text("status", g.Status)
	o.ms("timestamp", g.Timestamp)
	o.real("timeToArchive", g.TimeToArchive)
	o.real("timeToPreprocess", g.TimeToProcess)
	o.ms("updatedAt", g.UpdatedAt)
	return []byte(o.String())
}

// GranuleMessage is constructGranuleSnsMessage for "Update": the granule
// notification (with the providers first in its record on v22.1.1 and
// later; p nil: none).
func GranuleMessage(g *StoredGranule, p *Providers) []byte {
	return []byte(buildObject([]kv{{"event", `"Update"`}, {"record", string(p.Prefix(GranuleRecord(g)))}}))
}

// Providers are what Cumulus v22.1.1 and later put first in each record it
// publishes (CUMULUS-4866): the CMR and metrics providers of the message's
// collection, "" for a message without one.
type Providers struct{ CMR, Metrics string }

// ProviderSource is implemented by a DB whose Cumulus release publishes
// the providers. CollectionProviders returns nil when the release does not
// (v21, v22.0), else the collection's (collection nil: both "").
type ProviderSource interface {
	CollectionProviders(ctx context.Context, collection *int64) (*Providers, error)
}

// Prefix puts the providers first in a record ({metricsProvider,
// cmrProvider, ...record}); p nil leaves it as it is.
func (p *Providers) Prefix(record []byte) []byte {
	if p == nil || len(record) < 2 || record[0] != '{' {
		return record
	}
	head := `{"metricsProvider":` + jsonString(p.Metrics) + `,"cmrProvider":` + jsonString(p.CMR)
	if string(record) == "{}" {
		return []byte(head + "}")
	}
	out := make([]byte, 0, len(head)+len(record))
	out = append(append(out, head...), ',')
	return append(out, record[1:]...)
}

// PublishCounts counts the notifications one message published.
type PublishCounts struct {
	Execution int `json:"execution"`
	Granule   int `json:"granule"`
	Pdr       int `json:"pdr"`
}

// Add counts one notification of the topic.
func (c *PublishCounts) Add(t Topic) {
	switch t {
	case TopicExecution:
		c.Execution++
	case TopicGranule:
		c.Granule++
	case TopicPdr:
		c.Pdr++
	}
}

// recordSource is the Writer's DB as a RecordSource, for a Writer with a
// Notifier.
func (w *Writer) recordSource() (RecordSource, error) {
	src, ok := w.DB.(RecordSource)
	if !ok {
		return nil, fmt.Errorf("notifications need a database that returns the rows it writes (%T is not a recovery.RecordSource)", w.DB)
	}
	return src, nil
}

// publish sends one notification and counts it in res. A failure is a
// TransientError holding a PublishError, or the PublishError alone when
// the notification was rejected (ErrNotificationRejected).
func (w *Writer) publish(ctx context.Context, res *Result, topic Topic, message []byte) error {
	if err := w.Notifier.Publish(ctx, topic, message); err != nil {
		return publishError(topic, err)
	}
	if res != nil {
		if res.Published == nil {
			res.Published = &PublishCounts{}
		}
		res.Published.Add(topic)
	}
	return nil
}

// publishGranule completes the row and publishes it
// (_publishPostgresGranuleUpdateToSns).
func (w *Writer) publishGranule(ctx context.Context, src RecordSource, res *Result, g *StoredGranule) error {
	if err := src.CompleteGranule(ctx, g); err != nil {
		return err
	}
	return w.publish(ctx, res, TopicGranule, GranuleMessage(g, res.providers))
}

// publishError is a Notifier's error as the Writer returns it: a
// TransientError holding a PublishError (a re-run publishes again), or the
// PublishError alone when the notification can never be published
// (ErrNotificationRejected).
func publishError(topic Topic, err error) error {
	if errors.Is(err, ErrNotificationRejected) {
		return &PublishError{Topic: topic, Err: err}
	}
	return &TransientError{Err: &PublishError{Topic: topic, Err: err}}
}

// Notification is one notification held by a Deferred notifier.
type Notification struct {
	Topic   Topic
	Message []byte
}

// Deferred is a Notifier that holds the notifications of one message,
// after checking each one as the real Notifier would (Check, when set), so
// that they are published after the message's writes, by PublishAll: the
// recover workflow publishes them while the next message is written. A
// notification is still published only after the row it describes was
// written, and the archive object is deleted only after all of them were.
// Safe for concurrent use.
type Deferred struct {
	Check func(Topic, []byte) error
	mu    sync.Mutex
	held  []Notification
}

// Publish holds the notification (its error is Check's).
func (d *Deferred) Publish(_ context.Context, topic Topic, message []byte) error {
	if d.Check != nil {
		if err := d.Check(topic, message); err != nil {
			return err
		}
	}
	d.mu.Lock()
	d.held = append(d.held, Notification{Topic: topic, Message: message})
	d.mu.Unlock()
	return nil
}

// Held returns the notifications held, in the order they were published.
func (d *Deferred) Held() []Notification {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.held
}

// BatchNotifier is a Notifier that publishes several notifications to one
// topic in fewer calls (SNS PublishBatch).
type BatchNotifier interface {
	Notifier
	// PublishBatch publishes messages to topic, in order, and returns one
	// error per message (nil: published).
	PublishBatch(ctx context.Context, topic Topic, messages [][]byte) []error
}

// PublishErrorOf is a Notifier's error for one notification as the Writer
// returns it (see Writer.publish).
func PublishErrorOf(topic Topic, err error) error { return publishError(topic, err) }

// PublishAll publishes the notifications through n, in order, and stops
// at the first failure: the counts of those published, and the error as
// the Writer returns a failed publish.
func PublishAll(ctx context.Context, n Notifier, all []Notification) (PublishCounts, error) {
	var c PublishCounts
	for _, x := range all {
		if err := n.Publish(ctx, x.Topic, x.Message); err != nil {
			return c, publishError(x.Topic, err)
		}
		c.Add(x.Topic)
	}
	return c, nil
}
