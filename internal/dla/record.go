// Package dla is the pure core of the Cumulus Dead Letter Archive: it decodes
// archive objects of every generation into one Record, knows the key layout,
// and evaluates search filters. It performs no I/O.
package dla

import "time"

// Generation says which writer produced an archive object.
type Generation string

const (
	// GenDLARecord is the current DLA record (Cumulus v18.3+): SQS metadata,
	// hoisted fields (collectionId, executionArn, ...) and the innermost body.
	GenDLARecord Generation = "dla-record"
	// GenSQSRecord is a raw SQS record with no hoisted fields: archives written
	// before the hoisting (CUMULUS-3456), or records Cumulus stored verbatim.
	GenSQSRecord Generation = "sqs-record"
	// GenCumulusMessage is a bare Cumulus message (the oldest archives).
	GenCumulusMessage Generation = "cumulus-message"
	// GenEvent is a bare EventBridge Step Functions event.
	GenEvent Generation = "eventbridge-event"
	// GenUnknown is any other JSON object.
	GenUnknown Generation = "unknown"
)

// Generations lists every generation, in a stable order.
var Generations = []Generation{GenDLARecord, GenSQSRecord, GenCumulusMessage, GenEvent, GenUnknown}

// Record is one archive object, decoded. Empty strings stand for null.
type Record struct {
	Key       string // object key, relative to the bucket (or archive root)
	Size      int64  // object size in bytes
	Partition string // YYYY-MM-DD date folder of the key, "" for legacy flat keys
	// ObjectDate is the object's last-modified date: the date of last resort
	// for a legacy key whose message has no event time.
	ObjectDate string
	Generation Generation // which writer produced it
	Depth      int        // number of body/Body layers unwrapped

	MessageID       string
	ExecutionArn    string
	StateMachineArn string
	Status          string // raw Step Functions status (SUCCEEDED, FAILED, ...)
	Time            string // event time as written (ISO-8601)
	CollectionID    string // name___version
	ProviderID      string
	Granules        []string // nil when the message has no granule list; "" elements are null
	HasGranules     bool     // a granule list was present (possibly empty)
	Error           string
	HasError        bool // the error key held a value (possibly empty)

	// Problems are non-fatal decoding findings (a detail given as a string,
	// a Cumulus message that is not valid JSON, a payload held in S3, ...).
	Problems []string
	// Derived lists the fields this tool derived from the body because the
	// object did not carry them (or carried null).
	Derived []string
}

// ExecutionName is the last ':'- or '/'-separated token of the execution ARN.
func (r *Record) ExecutionName() string { return lastToken(r.ExecutionArn) }

// StateMachineName is the last ':'/'/' token of the state machine ARN: the
// workflow's name.
func (r *Record) StateMachineName() string { return lastToken(r.StateMachineArn) }

// EventTime parses Time; ok is false when it is missing or invalid.
func (r *Record) EventTime() (time.Time, bool) { return ParseEventTime(r.Time) }

// Date is the record's date: the key's date folder, else the event date,
// else the object's last-modified date.
func (r *Record) Date() string {
	if r.Partition != "" {
		return r.Partition
	}
	if t, ok := r.EventTime(); ok {
		return t.UTC().Format(DateLayout)
	}
	return r.ObjectDate
}

// ErrorHeadline is the error's headline (see Headline).
func (r *Record) ErrorHeadline() string { return Headline(r.Error) }

func lastToken(s string) string {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == ':' || s[i] == '/' {
			return s[i+1:]
		}
	}
	return s
}
