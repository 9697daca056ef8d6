// Package dlawriter is the DLA archiver Lambda (cmd/write-db-dlq-records-to-s3),
// a replacement for Cumulus v21's writeDbRecordsDLQtoS3: each record of the
// sfEventSqsToDbRecords dead-letter queue becomes the DLA record Cumulus's
// hoistCumulusMessageDetails makes (dla.Hoist, with the Cumulus message
// found as `dla recover` finds it: recovery.Unwrap), written to
// s3://<system_bucket>/<stackName>/dead-letter-archive/sqs/<date>/<execName|unknown>-<uuid>
// through the archive store the CLI uses.
//
// It differs from v21 in three ways:
//   - a record whose put fails is returned as a batch item failure
//     (ReportBatchItemFailures); the others are done;
//   - the UUID of the key is derived from the SQS message (queue ARN and
//     message id, dla.MessageUUID), so a batch delivered again overwrites
//     the objects it already wrote instead of adding copies;
//   - a record whose body cannot be parsed is archived as it came, with the
//     reason under "archiveError", instead of failing the batch until the
//     DLQ's retention drops it.
package dlawriter

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/awsconfig"
	"github.com/deadletter/deadletter/internal/awsread"
	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/processor/jsonlog"
	"github.com/deadletter/deadletter/internal/recovery"
)

// Config is the processor's environment, under Cumulus v21's names.
type Config struct {
	SystemBucket string // system_bucket
	Stack        string // stackName
}

// ConfigFromEnv reads system_bucket and stackName; a missing one is an
// error with v21's text.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	c := Config{SystemBucket: getenv("system_bucket"), Stack: getenv("stackName")}
	switch {
	case c.SystemBucket == "":
		return c, errors.New("System bucket env var is required.")
	case c.Stack == "":
		return c, errors.New("Could not determine archive path as stackName env var is undefined.")
	case strings.ContainsAny(c.SystemBucket, "/: \t\n"):
		// s3://bucket, an ARN, a path: no put could ever succeed, and
		// every record would be retried until the DLQ's retention drops it.
		return c, fmt.Errorf("system_bucket=%q: not a bucket name (give the name alone)", c.SystemBucket)
	}
	return c, nil
}

// Processor archives DLQ records. Its fields are its dependencies; New
// builds the production ones.
type Processor struct {
	Layout dla.Layout
	// Store is the archive's bucket, contained to Layout's root.
	Store archive.Store
	// SFN and Objects are what recovery.Unwrap reads: the execution history
	// of a failed execution, a `replace` payload in the system bucket.
	SFN     recovery.StepFunctions
	Objects recovery.Objects
	Now     func() time.Time
	// Log gets one JSON line per record (RecordLog) and one per
	// invocation (Summary).
	Log io.Writer
	// Concurrency bounds the records handled at once (10 when 0).
	Concurrency int
}

// New builds the processor from the environment: AWS clients as the CLI
// builds them (awsconfig; AWS_ENDPOINT_URL_S3 and friends are honoured),
// logging JSON lines to stdout.
func New(ctx context.Context, getenv func(string) string) (*Processor, error) {
	cfg, err := ConfigFromEnv(getenv)
	if err != nil {
		return nil, err
	}
	var s awsconfig.Settings
	awsCfg, err := awsconfig.Load(ctx, s)
	if err != nil {
		return nil, err
	}
	s3c := awsconfig.S3(awsCfg, s)
	return NewWith(cfg, archive.NewS3(s3c, cfg.SystemBucket),
		awsread.StepFunctions{Client: awsconfig.SFN(awsCfg, s)},
		awsread.Objects{Client: s3c, ReplaceBucket: cfg.SystemBucket}, os.Stdout), nil
}

// NewWith builds the processor over the given bucket store and readers.
func NewWith(cfg Config, bucket archive.Store, sfn recovery.StepFunctions, objs recovery.Objects, log io.Writer) *Processor {
	l := dla.Layout{Stack: cfg.Stack}
	return &Processor{
		Layout: l, Store: archive.Contain(bucket, l.Root()), SFN: sfn, Objects: objs,
		Now: time.Now, Log: log,
	}
}

// Event is an SQS event with each record kept as the JSON it came as, so
// that the archive holds every key of it, as Cumulus (which gets the
// parsed JSON) stores them: events.SQSMessage would drop unknown keys and
// add empty ones.
type Event struct {
	Records []json.RawMessage `json:"Records"`
}

// Outcome is what became of one record.
type Outcome string

const (
	Archived    Outcome = "archived"     // written as a DLA record
	ArchivedRaw Outcome = "archived-raw" // written as it came: it could not be parsed
	Failed      Outcome = "failed"       // not written; returned as a batch item failure
)

// RecordLog is one record's outcome, and its log line.
type RecordLog struct {
	Type      string  `json:"type"` // "record"
	MessageID string  `json:"message_id"`
	Key       string  `json:"key,omitempty"`
	Outcome   Outcome `json:"outcome"`
	// Reason says why the record was archived raw or failed, or why no
	// Cumulus message was found in it.
	Reason string `json:"reason,omitempty"`
}

// Summary is the log line of one invocation.
type Summary struct {
	Type        string  `json:"type"` // "summary"
	Records     int     `json:"records"`
	Archived    int     `json:"archived"`
	ArchivedRaw int     `json:"archived_raw"`
	Failed      int     `json:"failed"`
	Seconds     float64 `json:"seconds"`
}

// HandleSQSEvent is Handle for an events.SQSEvent (each record marshalled
// back to JSON: keys the struct does not know are lost).
func (p *Processor) HandleSQSEvent(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	raw := Event{Records: make([]json.RawMessage, len(ev.Records))}
	for i, r := range ev.Records {
		b, err := json.Marshal(r)
		if err != nil {
			return events.SQSEventResponse{}, err
		}
		raw.Records[i] = b
	}
	return p.Handle(ctx, raw)
}

// Handle archives every record, and returns as batch item failures exactly
// the records that were not written. It returns an error (the whole batch
// is delivered again) only when a record that was not written has no
// message id to name it by.
func (p *Processor) Handle(ctx context.Context, ev Event) (events.SQSEventResponse, error) {
	start := time.Now()
	results := p.Archive(ctx, ev.Records)
	resp := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
	sum := Summary{Type: "summary", Records: len(results)}
	unnamed := 0
	for _, r := range results {
		switch r.Outcome {
		case Archived:
			sum.Archived++
		case ArchivedRaw:
			sum.ArchivedRaw++
		default:
			sum.Failed++
			if r.MessageID == "" {
				unnamed++
			}
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: r.MessageID})
		}
	}
	sum.Seconds = time.Since(start).Seconds()
	p.log(sum)
	if unnamed > 0 {
		return events.SQSEventResponse{}, fmt.Errorf("%d records were not archived and have no messageId to report them by; failing the batch", unnamed)
	}
	return resp, nil
}

// Archive archives records, Concurrency at a time, logs each one's line,
// and returns them in order.
func (p *Processor) Archive(ctx context.Context, records []json.RawMessage) []RecordLog {
	results := make([]RecordLog, len(records))
	n := p.Concurrency
	if n <= 0 {
		n = 10
	}
	sem := make(chan struct{}, n)
	var wg sync.WaitGroup
	for i, raw := range records {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			results[i] = p.archiveOne(ctx, raw)
			p.log(results[i])
		}()
	}
	wg.Wait()
	return results
}

func (p *Processor) log(v any) { jsonlog.Line(p.Log, v) }

// archiveOne archives one record; a panic fails the record (it is
// delivered again), not the batch.
func (p *Processor) archiveOne(ctx context.Context, raw []byte) (r RecordLog) {
	r = RecordLog{Type: "record", MessageID: gjson.GetBytes(raw, "messageId").String()}
	defer func() {
		if e := recover(); e != nil {
			r.Outcome, r.Reason = Failed, fmt.Sprintf("internal error: %v", e)
		}
	}()
	h, err := dla.Hoist(raw, p.message(ctx))
	if err != nil {
		r.Outcome, r.Reason = Failed, err.Error()
		return r
	}
	r.MessageID, r.Key, r.Outcome, r.Reason = h.MessageID, p.Key(h, raw), Archived, h.Reason
	if h.Raw {
		r.Outcome = ArchivedRaw
	}
	if err := p.Store.Put(ctx, r.Key, h.JSON); err != nil {
		r.Outcome, r.Reason = Failed, err.Error()
	}
	return r
}

// maxKeyBytes is the longest key S3 takes (UTF-8 bytes).
const maxKeyBytes = 1024

// Key is the record's archive key: the v21 form, with a UUID that is the
// same each time the SQS message is delivered.
func (p *Processor) Key(h *dla.Hoisted, raw []byte) string {
	id := h.MessageID
	if id == "" { // no message id: the record's own bytes name it
		sum := sha256.Sum256(raw)
		id = "sha256:" + hex.EncodeToString(sum[:])
	}
	uuid := dla.MessageUUID(h.EventSourceARN, id)
	now := p.dateless(raw)
	key := h.Key(p.Layout, uuid, now)
	if archive.CheckKey(p.Layout.Root(), key) != nil || len(key) > maxKeyBytes {
		// An execution name S3 or the store cannot take (a NUL byte, or
		// longer than a key may be): every put would fail, and the record
		// would be retried until the DLQ's retention dropped it.
		key = p.Layout.DatePrefix(dla.AreaSQS, dla.DatePartition(h.Time, now)) + dla.ArchiveFileName("", uuid)
	}
	return key
}

// dateless is the instant a record without a valid event time is dated
// by. v21 dates it by the moment it writes it; here it is the moment SQS
// first handed the message to the archiver (ApproximateFirstReceiveTimestamp,
// else SentTimestamp), which is the same day on the first delivery and
// stays the same on every redelivery, so a record retried after midnight
// UTC overwrites its object instead of adding one in the next day's folder.
// Only a record with neither attribute is dated by the clock.
func (p *Processor) dateless(raw []byte) time.Time {
	for _, a := range []string{"ApproximateFirstReceiveTimestamp", "SentTimestamp"} {
		v := gjson.GetBytes(raw, "attributes."+a)
		if ms, err := strconv.ParseInt(v.String(), 10, 64); err == nil && v.Type == gjson.String && ms > 0 {
			return time.UnixMilli(ms).UTC()
		}
	}
	return p.Now()
}

// message finds a record's Cumulus message as `dla recover` does. A
// message Unwrap cannot find gives nulls, as the exception v21's hoist
// catches does; a transient failure (S3 unavailable) fails the record, to
// be retried.
func (p *Processor) message(ctx context.Context) dla.MessageFunc {
	return recovery.MessageFunc(ctx, p.SFN, p.Objects)
}
