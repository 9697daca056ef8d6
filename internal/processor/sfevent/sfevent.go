// Package sfevent is the db-writer processor: Cumulus's
// sfEventSqsToDbRecords as a Go Lambda. Each SQS record holds a Step
// Functions "Execution Status Change" event; it is unwrapped to its Cumulus
// message and written with the write core `dla recover` uses
// (recovery.Writer.WriteDecoded, on the database adapter cumulusdb.Open
// chose for the schema generation it read), so the CLI and the processor
// can never write a record differently.
//
// What happens to a record:
//   - written (or dropped by a write constraint): done, the event source
//     mapping deletes it;
//   - the write failed for a reason a retry cannot fix: the record, with
//     its `error`, is sent to the DeadLetterQueue, as v21 does; if that send
//     fails, the record is a batch item failure, so it is never dropped;
//   - the database, Step Functions or S3 was unavailable (a transient
//     error): a batch item failure, retried by SQS (v21 sends these to the
//     DLQ at once, where they wait for a manual recovery).
//
// An invocation whose payload has no Records list is not an SQS event: it
// fails (v21 throws on it too), so that Lambda retries it or sends it to
// the function's failure destination instead of dropping it. A
// DeadLetterQueue that is not a queue URL fails the cold start, as does a
// missing system_bucket: v21's function reads a message held in S3
// (`replace`) from any bucket; this one only from the system bucket, so it
// needs that variable, which v21's environment block may lack.
package sfevent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/processor/jsonlog"
	"github.com/deadletter/deadletter/internal/recovery"
	"github.com/deadletter/deadletter/internal/snspub"
	"github.com/deadletter/deadletter/internal/sqsmove"
)

// Environment variable names, as Cumulus v21's Terraform sets them.
const (
	EnvDeadLetterQueue = "DeadLetterQueue"
	EnvDBSecret        = "databaseCredentialSecretArn"
	EnvDBMaxPool       = "dbMaxPool"
	EnvSystemBucket    = "system_bucket"
	// EnvDatabaseURL is ours: a connection string instead of the secret.
	EnvDatabaseURL = "DATABASE_URL"
)

// DefaultMaxPool is the connections one function instance opens at most.
// Lambda runs many instances at once against one database, so each keeps
// few; the records of a batch are written this many at a time.
const DefaultMaxPool = 4

// Config is the processor's environment.
type Config struct {
	DeadLetterQueue string
	DBSecret        string
	DatabaseURL     string
	MaxPool         int
	SystemBucket    string
	// Topics are the execution, granule and PDR notification topics
	// (execution_sns_topic_arn, granule_sns_topic_arn, pdr_sns_topic_arn):
	// all three are required, as in v21.
	Topics snspub.Topics
}

// EnvError names the variable and the value that stop a cold start.
type EnvError struct {
	Name, Value, Problem string
}

func (e *EnvError) Error() string {
	return fmt.Sprintf("%s=%q: %s", e.Name, e.Value, e.Problem)
}

// LoadConfig reads the environment.
func LoadConfig(getenv func(string) string) (Config, error) {
	c := Config{
		DeadLetterQueue: getenv(EnvDeadLetterQueue),
		DBSecret:        getenv(EnvDBSecret),
		DatabaseURL:     getenv(EnvDatabaseURL),
		SystemBucket:    getenv(EnvSystemBucket),
		MaxPool:         DefaultMaxPool,
		Topics:          snspub.TopicsFromEnv(getenv),
	}
	var te *snspub.TopicError
	if err := c.Topics.Validate(); errors.As(err, &te) {
		return c, &EnvError{te.EnvVar, te.Value, te.Problem}
	}
	if v := getenv(EnvDBMaxPool); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			return c, &EnvError{EnvDBMaxPool, v, "not a connection count from 1 to 1000"}
		}
		c.MaxPool = n
	}
	if q := c.DeadLetterQueue; q != "" {
		// A name or an ARN where the URL belongs would fail every send:
		// each failed write would be retried until SQS's redrive.
		if err := sqsmove.CheckQueueURL(q); err != nil {
			return c, &EnvError{EnvDeadLetterQueue, q, err.Error() + " (https://sqs.<region>.amazonaws.com/<account>/<queue>)"}
		}
	}
	if c.DBSecret == "" && c.DatabaseURL == "" {
		return c, &EnvError{EnvDBSecret, "", "the database is not set: set " + EnvDBSecret + " (the Cumulus database secret) or " + EnvDatabaseURL}
	}
	if c.DBSecret != "" && c.DatabaseURL != "" {
		return c, &EnvError{EnvDatabaseURL, "(not shown)", "set " + EnvDBSecret + " or " + EnvDatabaseURL + ", not both"}
	}
	if c.SystemBucket == "" {
		// Without it every message Cumulus held in S3 (`replace`) would be
		// dead-lettered, with an error about a local archive.
		return c, &EnvError{EnvSystemBucket, "", "required: a Cumulus message too large for Step Functions is held in S3 (replace), and is read only from this bucket (Cumulus's system bucket)"}
	}
	return c, nil
}

// SQSAPI is the SQS call the processor makes.
type SQSAPI interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, opts ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

// Handler writes the records of one invocation.
type Handler struct {
	// Writer is the template each record is written with (its DB, SFN,
	// Objects and Notifier are shared; it is copied per record).
	Writer          recovery.Writer
	SQS             SQSAPI
	DeadLetterQueue string
	Concurrency     int
	Log             io.Writer // one JSON line per record, and a summary
}

// Outcomes of a record, in its log line.
const (
	OutcomeWritten      = "written"       // or dropped: the message needs nothing more
	OutcomeDeadLettered = "dead_lettered" // sent to the DeadLetterQueue with its error
	OutcomeRetry        = "retry"         // a batch item failure: SQS delivers it again
)

// RecordLog is the log line of one record.
type RecordLog struct {
	Type         string `json:"type"` // "record"
	MessageID    string `json:"message_id"`
	Outcome      string `json:"outcome"`
	Result       string `json:"result,omitempty"` // the write's: written, dropped, failed
	ExecutionArn string `json:"execution_arn,omitempty"`
	Status       string `json:"status,omitempty"`
	Error        string `json:"error,omitempty"`
	ErrorClass   string `json:"error_class,omitempty"`
	Reason       string `json:"reason,omitempty"` // why it is retried
	Published    int    `json:"sns_published,omitempty"`
	// PossibleDuplicate: its DeadLetterQueue send got no reply, so it may
	// be there already; the retry may dead-letter it a second time.
	PossibleDuplicate bool `json:"possible_duplicate,omitempty"`
}

// Summary is the log line of one invocation.
type Summary struct {
	Type         string  `json:"type"` // "summary"
	Records      int     `json:"records"`
	Written      int     `json:"written"`
	DeadLettered int     `json:"dead_lettered"`
	Retried      int     `json:"retried"`
	Seconds      float64 `json:"seconds"`
	// PossibleDuplicates are the records a retry may dead-letter twice.
	PossibleDuplicates []string `json:"possible_duplicate_ids,omitempty"`
}

// Handle processes one SQS event. Each element of Records is kept as the
// JSON it came as, so a record sent to the DeadLetterQueue is the record
// v21 would send ({...record, error}), byte for byte but for `error`.
func (h *Handler) Handle(ctx context.Context, event json.RawMessage) (events.SQSEventResponse, error) {
	start := time.Now()
	var in struct {
		Records *[]json.RawMessage `json:"Records"`
	}
	if err := json.Unmarshal(event, &in); err != nil {
		// Not an SQS event at all: nothing can be named or retried singly.
		return events.SQSEventResponse{}, fmt.Errorf("the invocation is not an SQS event: %w", err)
	}
	if in.Records == nil {
		// An event from anything but SQS (a Step Functions event sent
		// straight to the function, say): succeeding would drop it
		// unwritten; failing lets Lambda retry it or send it to the
		// function's failure destination (v21 throws on it too).
		return events.SQSEventResponse{}, errors.New("the invocation is not an SQS event: it has no Records list")
	}
	records := *in.Records
	logs := make([]RecordLog, len(records))
	limit := max(h.Concurrency, 1)
	sem := make(chan struct{}, limit)
	// SQS's at-least-once delivery can put two copies of one message in
	// one batch: the copy is handled once, so that a failed write sends
	// one dead letter (one archive object), not two.
	copyOf := make([]int, len(records)) // 1 + the index of the first copy; 0 for a first
	first := map[string]int{}
	var wg sync.WaitGroup
	for i, rec := range records {
		ids := gjson.GetManyBytes(rec, "eventSourceARN", "messageId")
		if ids[1].String() != "" {
			key := ids[0].String() + "\n" + ids[1].String()
			if j, ok := first[key]; ok {
				copyOf[i] = j + 1
				continue
			}
			first[key] = i
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			logs[i] = h.record(ctx, rec)
			h.log(logs[i])
		}()
	}
	wg.Wait()
	for i, j := range copyOf {
		if j > 0 {
			logs[i] = logs[j-1]
			logs[i].Reason = "a second copy of this message in the event: handled once"
			h.log(logs[i])
		}
	}
	resp := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
	sum := Summary{Type: "summary", Records: len(records)}
	for i, l := range logs {
		switch l.Outcome {
		case OutcomeWritten:
			sum.Written++
		case OutcomeDeadLettered:
			sum.DeadLettered++
		default:
			sum.Retried++
			if copyOf[i] == 0 {
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: l.MessageID})
				if l.PossibleDuplicate {
					sum.PossibleDuplicates = append(sum.PossibleDuplicates, l.MessageID)
				}
			}
		}
	}
	sum.Seconds = time.Since(start).Seconds()
	h.log(sum)
	return resp, nil
}

// record handles one record; it never panics its way out.
func (h *Handler) record(ctx context.Context, raw json.RawMessage) (l RecordLog) {
	l = RecordLog{Type: "record", MessageID: gjson.GetBytes(raw, "messageId").String()}
	defer func() {
		if p := recover(); p != nil {
			l.Outcome, l.Reason = OutcomeRetry, fmt.Sprintf("internal error: %v", p)
		}
	}()
	d, derr := dla.Decode(raw)
	if d != nil {
		l.ExecutionArn, l.Status = d.ExecutionArn, d.Status
	}
	var err error
	var res *recovery.Result
	if derr != nil {
		// The body is not JSON, or nests too deep: no retry can fix it.
		err = &recovery.UnwrapError{Reason: derr.Error()}
	} else {
		w := h.Writer
		_, res, err = w.WriteDecoded(ctx, d)
	}
	if res != nil {
		l.Result = res.Outcome()
		if p := res.Published; p != nil {
			l.Published = p.Execution + p.Granule + p.Pdr
		}
		if l.ExecutionArn == "" {
			l.ExecutionArn = res.ExecutionArn
		}
	}
	if err == nil {
		l.Outcome = OutcomeWritten
		return l
	}
	l.Result = recovery.Failed
	l.Error, l.ErrorClass = err.Error(), recovery.Class(err)
	// A notification that could not be published after a committed write
	// sends the record to the DeadLetterQueue, as in v21 (recover from the
	// archive republishes it); other transient failures are retried.
	if recovery.IsTransient(err) && !recovery.IsPublishError(err) {
		l.Outcome, l.Reason = OutcomeRetry, "transient: the database or AWS was unavailable"
		return l
	}
	if h.DeadLetterQueue == "" {
		// v21 drops the record here; it is retried instead, and SQS's
		// redrive policy moves it to the DLQ after maxReceiveCount.
		l.Outcome, l.Reason = OutcomeRetry, EnvDeadLetterQueue+" is not set: not dropped, left to SQS's redrive"
		return l
	}
	body := recovery.WithError(string(raw), err.Error())
	if _, serr := h.SQS.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(h.DeadLetterQueue), MessageBody: aws.String(body)}, sqsmove.SendOnce); serr != nil {
		l.Outcome, l.Reason = OutcomeRetry, "sending it to the DeadLetterQueue failed: "+serr.Error()
		if sqsmove.OutcomeUnknown(serr) {
			l.PossibleDuplicate = true
			l.Reason = "the DeadLetterQueue send got no reply (it may be there already; retried): " + serr.Error()
		}
		return l
	}
	l.Outcome = OutcomeDeadLettered
	return l
}

func (h *Handler) log(v any) { jsonlog.Line(h.Log, v) }
