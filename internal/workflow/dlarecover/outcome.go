package dlarecover

import (
	"fmt"

	"github.com/deadletter/deadletter/internal/recovery"
)

// What a run reports: each object's outcome, and the summary they add up to.

// Object is one object's outcome (a line of `dla recover -o ndjson`).
type Object struct {
	Type         string                    `json:"type"`
	Key          string                    `json:"key"`
	KeyBase64    *string                   `json:"key_base64,omitempty"` // the key's bytes when they are not UTF-8
	Result       Result                    `json:"result"`
	Action       Action                    `json:"action"`
	MovedTo      string                    `json:"moved_to,omitempty"`
	Error        string                    `json:"error,omitempty"`
	ErrorClass   string                    `json:"error_class,omitempty"`
	ExecutionArn string                    `json:"execution_arn,omitempty"`
	Status       string                    `json:"status,omitempty"`
	Source       string                    `json:"message_source,omitempty"`
	Execution    string                    `json:"execution,omitempty"`
	Pdr          string                    `json:"pdr,omitempty"`
	Granules     []recovery.GranuleOutcome `json:"granules,omitempty"`
	Warnings     []string                  `json:"warnings,omitempty"`
	// Published counts the SNS notifications published for this object
	// (in a dry run, that would have been).
	Published *recovery.PublishCounts `json:"sns_published,omitempty"`
	DryRun    bool                    `json:"dry_run,omitempty"`
	// GranuleIDs are the granule ids the object names, whatever became of
	// its write (the audit record's items); not in -o ndjson.
	GranuleIDs []string `json:"-"`
	res        *recovery.Result
	seq        int                     // its place in the selection
	skipped    bool                    // fed ahead, not started: the run stopped
	reported   bool                    // told to recoverRun.Acted
	held       []recovery.Notification // notifications to publish before the archive action
	// pending is the batched delete of a written object: its line says
	// "deleted" only once that delete returned (settle).
	pending *pendingDelete
}

// Result is what became of an object's write.
type Result string

// An object's results.
const (
	ResultWritten    Result = recovery.Written   // written (or would be, in a dry run)
	ResultDropped    Result = recovery.Dropped   // the write constraints blocked it: nothing to write
	ResultFailed     Result = recovery.Failed    // the message cannot be written as it is
	ResultUnreadable Result = "unreadable"       // the object cannot be read or decoded
	ResultLeft       Result = "left"             // not tried to the end: the environment failed
	ResultGone       Result = Result(ActionGone) // another run moved or deleted it first (counting only)
)

// Action is what became of the object itself.
type Action string

// An object's actions.
const (
	ActionDeleted     Action = "deleted"      // written or dropped, and deleted
	ActionWouldDelete Action = "would delete" // a dry run's
	ActionMoved       Action = "moved"        // to failed-sqs/
	ActionWouldMove   Action = "would move"   // a dry run's
	ActionCopied      Action = "copied"       // moved, but its delete failed: in both places
	ActionKept        Action = "kept"         // --keep
	ActionLeft        Action = "left"         // where it was
	// ActionGone is the action of an object that was gone when this run
	// came to delete or move it: another run (into another database, or a
	// run resumed after one) moved or deleted it first. Such an object is
	// counted in GoneElsewhere alone, whatever its write did, and is no
	// failure of this run's.
	ActionGone Action = "gone"
)

// goneNote says why an object's action is ActionGone.
const goneNote = "already moved or deleted by another run"

// Summary sums a run (the summary record of `dla recover`).
type Summary struct {
	Type       string `json:"type"`
	DryRun     bool   `json:"dry_run"`
	Keep       bool   `json:"keep"`
	Database   string `json:"database"`
	Schema     string `json:"schema"` // the Cumulus schema generation read from the catalog (v21, v22.0, v22.2, v22.3)
	Selected   int    `json:"selected"`
	Processed  int    `json:"processed"`
	Written    int    `json:"written"`
	Dropped    int    `json:"dropped"`
	Failed     int    `json:"failed"`
	Unreadable int    `json:"unreadable"`
	Left       int    `json:"left"` // left in place (database/AWS unavailable, read errors)
	// GoneElsewhere counts the objects gone when this run came to delete
	// or move them: another run moved or deleted them first (action
	// "gone"). They are processed, and not counted as written, dropped,
	// failed, unreadable or left.
	GoneElsewhere   int        `json:"gone_elsewhere"`
	NotProcessed    int        `json:"not_processed"` // selected but never reached (a stop or an interrupt)
	LeftAlone       int        `json:"unreadable_left_alone"`
	Deleted         int        `json:"deleted"`
	Moved           int        `json:"moved"`
	Executions      int        `json:"executions_written"`
	Pdrs            int        `json:"pdrs_written"`
	PdrsDropped     int        `json:"pdrs_dropped"`
	GranulesWritten int        `json:"granules_written"`
	GranulesDropped int        `json:"granules_dropped"`
	GranulesFailed  int        `json:"granules_failed"`
	FilesFailed     int        `json:"granules_marked_failed_for_files"`
	NoProcTimes     int        `json:"written_without_processing_times"`
	SNS             SNSSummary `json:"sns"`
	Interrupted     bool       `json:"interrupted"`
	StoppedBy       string     `json:"stopped_by,omitempty"`
	Seconds         float64    `json:"seconds"`
}

// SNSSummary counts the SNS notifications of a run.
type SNSSummary struct {
	// Topics: the Writer had a Notifier (topic ARNs were given).
	Topics bool `json:"topics"`
	// Published: they were sent. False in a dry run, where the counts are
	// what would have been published.
	Published bool `json:"published"`
	recovery.PublishCounts
	// PossibleDuplicates counts the publish attempts whose reply was lost
	// (no reply, or a server error): SNS may have delivered each one as well
	// as what is counted as published, so a topic received at least the
	// published count and at most that plus these. The SDK retries such an
	// attempt (a duplicate if the first got through); an object whose
	// publish failed so is left, and a re-run publishes again.
	PossibleDuplicates recovery.PublishCounts `json:"possible_duplicates"`
}

// Unconfirmed is implemented by a Notifier that counts its publish
// attempts of unknown outcome (snspub.Publisher).
type Unconfirmed interface {
	Unconfirmed() recovery.PublishCounts
}

// StoppedError says the run stopped before the end (the database lock was
// lost, the database or AWS became unavailable): what was not reached is
// left in place for a re-run.
type StoppedError struct {
	Err  error
	Left int // objects not processed or left in place
}

func (e *StoppedError) Error() string {
	return fmt.Sprintf("stopped: %v; %d not processed or left in place: re-run to continue", e.Err, e.Left)
}
func (e *StoppedError) Unwrap() error { return e.Err }

// count adds one object's result to the summary.
func (r *recoverRun) count(o Object) {
	s := r.Sum
	s.Processed++
	result := o.Result
	switch {
	case o.Action == ActionGone:
		result = ResultGone // another run moved or deleted it: not this run's to count
	case (result == ResultFailed || result == ResultUnreadable) && (o.Action == ActionLeft || o.Action == ActionCopied):
		result = ResultLeft // its move failed: it is still where it was
	}
	if o.Action == ActionDeleted {
		s.Deleted++
	}
	switch result {
	case ResultWritten:
		s.Written++
	case ResultDropped:
		s.Dropped++
	case ResultFailed:
		s.Failed++
	case ResultUnreadable:
		s.Unreadable++
	case ResultLeft:
		s.Left++
		s.Processed--
	case ResultGone:
		s.GoneElsewhere++
	}
	if o.Execution == recovery.Written {
		s.Executions++
	}
	switch o.Pdr {
	case recovery.Written:
		s.Pdrs++
	case recovery.Dropped:
		s.PdrsDropped++
	}
	for _, g := range o.Granules {
		switch g.Outcome {
		case recovery.Written:
			s.GranulesWritten++
		case recovery.Dropped:
			s.GranulesDropped++
		case recovery.Failed:
			s.GranulesFailed++
		}
		if g.FilesError != "" {
			s.FilesFailed++
		}
	}
	if p := o.Published; p != nil {
		s.SNS.Execution += p.Execution
		s.SNS.Granule += p.Granule
		s.SNS.Pdr += p.Pdr
	}
	if o.res != nil && o.res.DescribeCalled && !o.res.ProcessingTimes && (o.Result == recovery.Written || o.Result == recovery.Dropped) {
		s.NoProcTimes++
	}
}
