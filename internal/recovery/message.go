package recovery

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/dla/jsontext"
	"github.com/tidwall/gjson"
)

// ErrNotFound is returned by Objects and StepFunctions when the object or
// execution does not exist.
var ErrNotFound = errors.New("not found")

// ErrRefused is returned by Objects when S3 refuses that one object for a
// reason of its own: access denied on that bucket or key, an invalid bucket
// name or request, a bucket in another region. Reading it again will fail
// the same way, so it is the message's failure (as in v21), not a transient
// one. Throttling, 5xx answers, timeouts, connection failures and failures
// of the credentials (none at all, expired, rejected), which every object
// would meet, are none of these: Objects returns them as they are and the
// write core takes them for transient.
var ErrRefused = errors.New("refused")

// HistoryEvent is the part of a Step Functions history event the failed
// execution rules read.
type HistoryEvent struct {
	ID, PreviousEventID int64
	Type                string
	StateName           string  // stateEnteredEventDetails.name
	Output              *string // stateExitedEventDetails.output
	// FailedDetails is the JSON object of the failure's details:
	// activityFailedEventDetails, lambdaFunctionFailedEventDetails
	// ({"error":..,"cause":..}) or taskFailedEventDetails (an ECS or other
	// service-integration task: error, cause, resource, resourceType).
	FailedDetails string
}

// ExecutionDescription is what DescribeExecution says of an execution.
type ExecutionDescription struct {
	StartDate, StopDate time.Time // zero when absent
}

// StepFunctions is the read-only Step Functions API the writes use.
type StepFunctions interface {
	DescribeExecution(ctx context.Context, arn string) (ExecutionDescription, error)
	GetExecutionHistory(ctx context.Context, arn string) ([]HistoryEvent, error)
}

// Objects reads S3: remote `replace` messages, CMR files and file sizes.
// Its errors are ErrNotFound, ErrRefused, or anything else (transient).
type Objects interface {
	GetObject(ctx context.Context, bucket, key string) ([]byte, error)
	ObjectSize(ctx context.Context, bucket, key string) (int64, error)
	// SystemBucket is the only bucket a `replace` payload is read from:
	// Cumulus's system bucket, where the Cumulus Message Adapter stores
	// messages too large for the queue and the archive lives. "" when it is
	// not known (a local archive): no `replace` payload is read. An archived
	// message names any bucket it likes; reading it with the operator's
	// credentials and writing it to the database must not be its choice.
	SystemBucket() string
}

// Message is a Cumulus message ready to write.
type Message struct {
	JSON gjson.Result
	// Source says where it came from ("detail.output", "execution history
	// (step PostToCmr)", "body", ...), for the dry run.
	Source   string
	Warnings []string
}

// cumulusStatus maps a Step Functions status to meta.status.
func cumulusStatus(sfn string) string {
	switch sfn {
	case "ABORTED", "FAILED", "TIMED_OUT":
		return "failed"
	case "RUNNING":
		return "running"
	case "SUCCEEDED":
		return "completed"
	}
	return ""
}

// Unwrap derives the Cumulus message of a decoded archive object, as
// Cumulus's unwrapDeadLetterCumulusMessage and
// getCumulusMessageFromExecutionEvent do: the input or output by status, the
// failed step's output from the execution history for failed executions, a
// `replace` payload read from S3, then meta.status and
// cumulus_meta.workflow_stop_time from the event.
//
// Unlike v21 it decodes a `detail` given as a JSON string, and it says why
// an object holds no message instead of handing the wrapper to the writer.
func Unwrap(ctx context.Context, d *dla.Decoded, sfn StepFunctions, objs Objects) (*Message, error) {
	if d.MessageSource == "body" {
		return &Message{JSON: gjson.Parse(d.Message), Source: "body"}, nil
	}
	if d.Detail == "" {
		if len(d.Problems) > 0 {
			return nil, &UnwrapError{Reason: strings.Join(d.Problems, "; ")}
		}
		return nil, &UnwrapError{Reason: "the object holds neither an EventBridge event nor a Cumulus message"}
	}
	detail := gjson.Parse(d.Detail)
	status := detail.Get("status").String()
	m := &Message{}
	var msg string
	switch {
	case status == "RUNNING" || status == "SUCCEEDED":
		if d.Message == "" {
			return nil, &UnwrapError{Reason: strings.Join(d.Problems, "; ")}
		}
		msg, m.Source = d.Message, d.MessageSource
	default:
		input := d.Message
		if input == "" {
			if in := detail.Get("input"); in.Exists() && in.Type != gjson.Null {
				return nil, &UnwrapError{Reason: strings.Join(d.Problems, "; ")}
			}
			input = "{}"
		}
		var err error
		msg, m.Source, err = failedExecutionMessage(ctx, input, sfn, objs, m)
		if err != nil {
			return nil, err
		}
	}
	msg, err := pullStepFunctionEvent(ctx, msg, objs)
	if err != nil {
		return nil, err
	}
	if !gjson.Parse(msg).IsObject() {
		return nil, &UnwrapError{Reason: "the message from " + m.Source + " is not a JSON object"}
	}
	meta := gjson.Get(msg, "meta").Raw
	st := ""
	if s := cumulusStatus(status); s != "" {
		st = jsonString(s)
	}
	msg = objSet(msg, "meta", objSet(orEmpty(meta), "status", st))
	cm := gjson.Get(msg, "cumulus_meta").Raw
	stop := ""
	if v := detail.Get("stopDate"); v.Exists() && v.Type != gjson.Null {
		stop = v.Raw
	}
	msg = objSet(msg, "cumulus_meta", objSet(orEmpty(cm), "workflow_stop_time", stop))
	m.JSON = gjson.Parse(msg)
	return m, nil
}

func orEmpty(raw string) string {
	if gjson.Parse(raw).IsObject() {
		return raw
	}
	return "{}"
}

// executionArn is getMessageExecutionArn: the state machine ARN with
// "stateMachine" replaced by "execution", then ":" and the execution name.
func executionArn(msg Getter) string {
	sm, name := msg.Get("cumulus_meta.state_machine"), msg.Get("cumulus_meta.execution_name")
	if !truthy(sm) || !truthy(name) {
		return ""
	}
	return strings.Replace(jsString(sm), "stateMachine", "execution", 1) + ":" + jsString(name)
}

// failedStepEvents are the history events lastFailedEventStep takes for
// the failed step: a Lambda or an activity (v21), and a task of a service
// integration such as ECS's runTask (TaskFailed, nasa/cumulus#4582, in
// Cumulus after v22.4). Without TaskFailed, an execution that failed in an
// ECS task was written from its input, and granules its failed step had
// added stayed "running".
var failedStepEvents = map[string]bool{"LambdaFunctionFailed": true, "ActivityFailed": true, "TaskFailed": true}

// failedExecutionMessage is getFailedExecutionMessage: for a failed
// execution, the output of the step that failed, read from the execution
// history. When the history cannot be read (expired, another account) the
// input is used, as in v21, with a warning.
func failedExecutionMessage(ctx context.Context, input string, sfn StepFunctions, objs Objects, m *Message) (string, string, error) {
	arn := executionArn(gjson.Parse(input))
	if arn == "" || sfn == nil {
		return input, "detail.input", nil
	}
	events, err := sfn.GetExecutionHistory(ctx, arn)
	if err != nil {
		if ctx.Err() != nil {
			return "", "", &TransientError{Err: ctx.Err()}
		}
		m.Warnings = append(m.Warnings, fmt.Sprintf("execution history of %s not read (%v); using detail.input", arn, err))
		return input, "detail.input", nil
	}
	failed := -1
	for i := len(events) - 1; i >= 0; i-- {
		if failedStepEvents[events[i].Type] {
			failed = i
			break
		}
	}
	if failed < 0 {
		return input, "detail.input", nil
	}
	fe := events[failed]
	step := "UnknownFailedStepName"
	for i := failed - 1; i >= 0; i-- {
		if events[i].Type == "TaskStateEntered" {
			step = events[i].StateName
			break
		}
	}
	var exited *HistoryEvent
	for i := range events {
		if events[i].Type == "TaskStateExited" && events[i].PreviousEventID == fe.ID {
			exited = &events[i]
			break
		}
	}
	source := "execution history (step " + step + ")"
	if exited == nil || exited.Output == nil {
		exc := objMerge(fe.FailedDetails, buildObject([]kv{{"failedExecutionStepName", jsonString(step)}}))
		return objSet(input, "exception", exc), source, nil
	}
	if jsontext.TooDeep(*exited.Output) {
		return "", "", &UnwrapError{Reason: fmt.Sprintf("the output of the failed step %s in the execution history is nested deeper than %d levels", step, jsontext.MaxDepth)}
	}
	out := gjson.Parse(*exited.Output)
	if !out.IsObject() {
		m.Warnings = append(m.Warnings, "the failed step's output is not a JSON object; using detail.input")
		return input, "detail.input", nil
	}
	exc := objMerge(out.Get("exception").Raw, buildObject([]kv{{"failedExecutionStepName", jsonString(step)}}))
	msg := objSet(out.Raw, "exception", exc)
	// parseStepMessage: flatten a Cumulus Message Adapter envelope.
	if cma := gjson.Get(msg, "cma"); truthy(cma) {
		msg = objDelete(objMerge(msg, cma.Raw, cma.Get("event").Raw), "cma", "event")
	}
	return msg, source, nil
}

// pullStepFunctionEvent resolves `replace: {Bucket, Key, TargetPath}`: the
// message (or the node at TargetPath) was too large and is held in S3. It is
// read only from objs.SystemBucket() (v21 reads any bucket named); any other
// bucket, or a read S3 refuses, fails the message, not the run.
func pullStepFunctionEvent(ctx context.Context, msg string, objs Objects) (string, error) {
	r := gjson.Get(msg, "replace")
	if !r.IsObject() {
		return msg, nil
	}
	bucket, key := r.Get("Bucket").String(), r.Get("Key").String()
	if objs == nil {
		return "", &UnwrapError{Reason: fmt.Sprintf("the message is held in S3 (s3://%s/%s) and no S3 reader was given", bucket, key)}
	}
	switch sys := objs.SystemBucket(); {
	case sys == "":
		return "", &UnwrapError{Reason: fmt.Sprintf("the message is held in S3 (s3://%s/%s) and is not read: a message held in S3 is read only "+
			"from the archive's own bucket, and this archive is local; recover it from the archive in S3", bucket, key)}
	case bucket != sys:
		return "", &UnwrapError{Reason: fmt.Sprintf("the message is held in S3 at s3://%s/%s, outside the archive's bucket %s, and is not read "+
			"(Cumulus keeps such messages in its system bucket, which holds the archive)", bucket, key, sys)}
	}
	body, err := objs.GetObject(ctx, bucket, key)
	switch {
	case err == nil:
	case errors.Is(err, ErrNotFound):
		return "", &UnwrapError{Reason: fmt.Sprintf("the message is held in S3 at s3://%s/%s, which does not exist", bucket, key)}
	case errors.Is(err, ErrRefused):
		return "", &UnwrapError{Reason: fmt.Sprintf("the message is held in S3 at s3://%s/%s, which cannot be read: %v", bucket, key, err)}
	default:
		return "", &TransientError{Err: fmt.Errorf("reading the message held at s3://%s/%s: %w", bucket, key, err)}
	}
	if jsontext.TooDeepBytes(body) {
		return "", &UnwrapError{Reason: fmt.Sprintf("the message held at s3://%s/%s is nested deeper than %d levels", bucket, key, jsontext.MaxDepth)}
	}
	if !gjson.ValidBytes(body) {
		return "", &UnwrapError{Reason: fmt.Sprintf("the message held at s3://%s/%s is not valid JSON", bucket, key)}
	}
	remote := string(body)
	tp := r.Get("TargetPath").String()
	if tp == "" || tp == "$" {
		return remote, nil
	}
	path, ok := strings.CutPrefix(tp, "$.")
	if !ok || strings.ContainsAny(path, "[]*'\"") {
		return "", &UnwrapError{Reason: fmt.Sprintf("replace.TargetPath %q is not a simple $.a.b path", tp)}
	}
	return objDelete(setPath(msg, strings.Split(path, "."), remote), "replace"), nil
}

// setPath sets the node at path (creating objects on the way) to val.
func setPath(raw string, path []string, val string) string {
	if len(path) == 1 {
		return objSet(orEmpty(raw), path[0], val)
	}
	child := gjson.Get(raw, gjsonEscape(path[0])).Raw
	return objSet(orEmpty(raw), path[0], setPath(orEmpty(child), path[1:], val))
}

// gjsonEscape escapes a key for use as one gjson path component.
func gjsonEscape(s string) string {
	if !strings.ContainsAny(s, ".*?|#@\\") {
		return s
	}
	return gjsonKeyEscaper.Replace(s)
}

// gjsonKeyEscaper is built once: building a Replacer costs far more than
// using one, and keys are escaped for every field of every file.
var gjsonKeyEscaper = strings.NewReplacer(".", `\.`, "*", `\*`, "?", `\?`, "|", `\|`, "#", `\#`, "@", `\@`, `\`, `\\`)

// MessageFunc is the Cumulus message lookup dla.Hoist needs, as the DLA
// writer makes it: Unwrap, with a failure a retry may cure returned as an
// error and any other one given as the reason no message was derived.
func MessageFunc(ctx context.Context, sfn StepFunctions, objs Objects) dla.MessageFunc {
	return func(d *dla.Decoded) (gjson.Result, string, error) {
		m, err := Unwrap(ctx, d, sfn, objs)
		switch {
		case IsTransient(err):
			return gjson.Result{}, "", err
		case err != nil:
			return gjson.Result{}, err.Error(), nil
		}
		return m.JSON, "", nil
	}
}
