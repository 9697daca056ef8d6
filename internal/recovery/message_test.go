package recovery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/dla"
)

// sfnFake answers from fixed histories; executions it does not know fail
// with ErrNotFound (an expired history).
type sfnFake struct {
	history map[string][]HistoryEvent
	desc    map[string]ExecutionDescription
	err     error
}

func (f *sfnFake) DescribeExecution(_ context.Context, arn string) (ExecutionDescription, error) {
	if f.err != nil {
		return ExecutionDescription{}, f.err
	}
	d, ok := f.desc[arn]
	if !ok {
		return d, ErrNotFound
	}
	return d, nil
}

func (f *sfnFake) GetExecutionHistory(_ context.Context, arn string) ([]HistoryEvent, error) {
	h, ok := f.history[arn]
	if !ok {
		return nil, ErrNotFound
	}
	return h, nil
}

const smArn = "arn:aws:states:us-east-1:123456789012:stateMachine:demo-IngestGranule"
const execArn = "arn:aws:states:us-east-1:123456789012:execution:demo-IngestGranule:e1"

// event wraps a Cumulus message in an EventBridge Step Functions event of
// this status (input and, for SUCCEEDED, output as JSON strings).
func event(t *testing.T, status, input, output string) *dla.Decoded {
	t.Helper()
	detail := map[string]any{"executionArn": execArn, "stateMachineArn": smArn, "name": "e1", "status": status,
		"startDate": 1709251200000, "stopDate": 1709251260000, "input": input}
	if output != "" {
		detail["output"] = output
	}
	b, _ := json.Marshal(map[string]any{"version": "0", "detail-type": "Step Functions Execution Status Change",
		"source": "aws.states", "time": "2024-03-01T00:01:00Z", "detail": detail})
	d, err := dla.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

const inputMsg = `{"cumulus_meta":{"state_machine":"` + smArn + `","execution_name":"e1","workflow_start_time":1709251200000},"meta":{"workflow_name":"IngestGranule"},"payload":{"granules":[{"granuleId":"g1"}]}}`

func TestUnwrapStatusAndStopTime(t *testing.T) {
	m, err := Unwrap(context.Background(), event(t, "SUCCEEDED", inputMsg, strings.Replace(inputMsg, `"g1"`, `"g-out"`, 1)), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if m.Source != "detail.output" || m.JSON.Get("payload.granules.0.granuleId").String() != "g-out" {
		t.Errorf("a SUCCEEDED event gives its output: %s from %s", m.JSON.Raw, m.Source)
	}
	if m.JSON.Get("meta.status").String() != "completed" || m.JSON.Get("cumulus_meta.workflow_stop_time").Int() != 1709251260000 {
		t.Errorf("meta.status and workflow_stop_time from the event: %s", m.JSON.Raw)
	}
	m, err = Unwrap(context.Background(), event(t, "RUNNING", inputMsg, ""), nil, nil)
	if err != nil || m.JSON.Get("meta.status").String() != "running" || m.JSON.Get("payload.granules.0.granuleId").String() != "g1" {
		t.Errorf("a RUNNING event gives its input with status running: %v %v", m, err)
	}
}

func TestUnwrapFailedStepOutputWithCMA(t *testing.T) {
	// The failed step's output is a Cumulus Message Adapter envelope: its
	// cma and cma.event keys are flattened into the message.
	stepOut := `{"cma":{"event":{"cumulus_meta":{"state_machine":"` + smArn + `","execution_name":"e1","workflow_start_time":1709251200000},` +
		`"payload":{"granules":[{"granuleId":"g-step"}]}},"task_config":{"x":1}},"exception":{"Error":"Boom"}}`
	sfn := &sfnFake{history: map[string][]HistoryEvent{execArn: {
		{ID: 1, Type: "ExecutionStarted"},
		{ID: 2, Type: "TaskStateEntered", StateName: "SyncGranule"},
		{ID: 3, Type: "LambdaFunctionFailed", PreviousEventID: 2, FailedDetails: `{"error":"Boom","cause":"bad"}`},
		{ID: 4, Type: "TaskStateExited", PreviousEventID: 3, Output: &stepOut},
	}}}
	m, err := Unwrap(context.Background(), event(t, "FAILED", inputMsg, ""), sfn, nil)
	if err != nil {
		t.Fatal(err)
	}
	if m.Source != "execution history (step SyncGranule)" {
		t.Errorf("source %q", m.Source)
	}
	j := m.JSON
	if j.Get("payload.granules.0.granuleId").String() != "g-step" || j.Get("cma").Exists() || j.Get("event").Exists() || j.Get("task_config.x").Int() != 1 {
		t.Errorf("CMA envelope not flattened: %s", j.Raw)
	}
	if j.Get("exception.failedExecutionStepName").String() != "SyncGranule" || j.Get("meta.status").String() != "failed" {
		t.Errorf("exception or status: %s", j.Raw)
	}

	// No TaskStateExited output: the input, with the failure details as the exception.
	sfn.history[execArn] = sfn.history[execArn][:3]
	m, err = Unwrap(context.Background(), event(t, "FAILED", inputMsg, ""), sfn, nil)
	if err != nil || m.JSON.Get("exception.error").String() != "Boom" || m.JSON.Get("exception.failedExecutionStepName").String() != "SyncGranule" ||
		m.JSON.Get("payload.granules.0.granuleId").String() != "g1" {
		t.Errorf("without the step output: %v %v", m, err)
	}

	// An expired history: the input, with a warning.
	m, err = Unwrap(context.Background(), event(t, "TIMED_OUT", inputMsg, ""), &sfnFake{}, nil)
	if err != nil || m.Source != "detail.input" || len(m.Warnings) != 1 || !strings.Contains(m.Warnings[0], "not read") {
		t.Errorf("expired history: %+v %v", m, err)
	}
}

func TestUnwrapReplaceFromS3(t *testing.T) {
	objs := objectsFake{
		"s3://sys/events/whole.json": inputMsg,
		"s3://sys/events/part.json":  `{"granules":[{"granuleId":"g-remote"}]}`,
		"s3://sys/events/bad.json":   `{"granules":`,
	}
	whole := `{"cumulus_meta":{"execution_name":"e1"},"replace":{"Bucket":"sys","Key":"events/whole.json","TargetPath":"$"}}`
	m, err := Unwrap(context.Background(), event(t, "RUNNING", whole, ""), nil, objs)
	if err != nil || m.JSON.Get("payload.granules.0.granuleId").String() != "g1" || m.JSON.Get("replace").Exists() {
		t.Errorf("TargetPath $ replaces the message: %v %v", m, err)
	}
	part := strings.Replace(inputMsg, `"payload":{"granules":[{"granuleId":"g1"}]}`,
		`"payload":{},"replace":{"Bucket":"sys","Key":"events/part.json","TargetPath":"$.payload"}`, 1)
	m, err = Unwrap(context.Background(), event(t, "RUNNING", part, ""), nil, objs)
	if err != nil || m.JSON.Get("payload.granules.0.granuleId").String() != "g-remote" || m.JSON.Get("replace").Exists() ||
		m.JSON.Get("cumulus_meta.execution_name").String() != "e1" {
		t.Errorf("TargetPath $.payload replaces the payload only: %v %v", m, err)
	}
	for key, want := range map[string]string{"events/gone.json": "does not exist", "events/bad.json": "not valid JSON"} {
		msg := strings.Replace(whole, "events/whole.json", key, 1)
		_, err := Unwrap(context.Background(), event(t, "RUNNING", msg, ""), nil, objs)
		var ue *UnwrapError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an UnwrapError saying %q", key, err, want)
		}
	}
	if _, err := Unwrap(context.Background(), event(t, "RUNNING", whole, ""), nil, nil); err == nil || !strings.Contains(err.Error(), "no S3 reader") {
		t.Errorf("offline with a replace: %v", err)
	}
}

// A `replace` is read only from the system bucket (the archive's); another
// bucket, or any bucket for a local archive (""), fails the message unread.
// S3 refusing the object fails the message; other read failures are
// transient.
func TestUnwrapReplaceBucketAndReadErrors(t *testing.T) {
	msg := func(bucket string) *dla.Decoded {
		return event(t, "RUNNING", `{"cumulus_meta":{"execution_name":"e1"},"replace":{"Bucket":"`+bucket+`","Key":"prod/secret","TargetPath":"$"}}`, "")
	}
	for _, c := range []struct {
		name, sys, bucket string
		err               error
		reads             int
		transient         bool
		want              string
	}{
		{"another bucket", "sys", "other", nil, 0, false, "s3://other/prod/secret, outside the archive's bucket sys, and is not read"},
		{"a local archive", "", "sys", nil, 0, false, "this archive is local"},
		{"refused", "sys", "sys", refusedErr, 1, false, "s3://sys/prod/secret, which cannot be read: refused: AccessDenied: Access Denied (HTTP 403)"},
		{"not found", "sys", "sys", fmt.Errorf("%w: s3://sys/prod/secret", ErrNotFound), 1, false, "does not exist"},
		{"throttled", "sys", "sys", errors.New("SlowDown (HTTP 503)"), 1, true, "reading the message held at s3://sys/prod/secret: SlowDown"},
	} {
		n := 0
		_, err := Unwrap(context.Background(), msg(c.bucket), nil, objectsFailing{sys: c.sys, err: c.err, reads: &n})
		var ue *UnwrapError
		switch {
		case err == nil || !strings.Contains(err.Error(), c.want):
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		case IsTransient(err) != c.transient:
			t.Errorf("%s: transient %v, want %v (%v)", c.name, IsTransient(err), c.transient, err)
		case !c.transient && !errors.As(err, &ue):
			t.Errorf("%s: %T, want an UnwrapError (the message's failure)", c.name, err)
		}
		if n != c.reads {
			t.Errorf("%s: %d reads, want %d", c.name, n, c.reads)
		}
	}
}

func TestUnwrapStringDetail(t *testing.T) {
	// v21 cannot read an event whose detail is a JSON string; it is decoded here.
	detail, _ := json.Marshal(map[string]any{"status": "RUNNING", "input": inputMsg, "stopDate": nil})
	b, _ := json.Marshal(map[string]any{"source": "aws.states", "detail-type": "Step Functions Execution Status Change", "detail": string(detail)})
	d, err := dla.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Unwrap(context.Background(), d, nil, nil)
	if err != nil || m.JSON.Get("payload.granules.0.granuleId").String() != "g1" || m.JSON.Get("meta.status").String() != "running" {
		t.Errorf("string detail: %v %v", m, err)
	}
}

func TestGJSONEscapeReadsAnyKey(t *testing.T) {
	obj := `{"a.b":1,"w*":2,"q?":3,"p|":4,"h#":5,"@at":6,"back\\slash":7,"plain":8}`
	for i, k := range []string{"a.b", "w*", "q?", "p|", "h#", "@at", `back\slash`, "plain"} {
		if got := gjson.Get(obj, gjsonEscape(k)).Int(); got != int64(i+1) {
			t.Errorf("key %q: %d, want %d", k, got, i+1)
		}
	}
}

// An ECS task's failure (TaskFailed) is the failed step as a Lambda's is:
// with no TaskStateExited after it, the input is used with the task's
// failure details as the exception.
func TestUnwrapTaskFailedIsAFailedStep(t *testing.T) {
	sfn := &sfnFake{history: map[string][]HistoryEvent{execArn: {
		{ID: 1, Type: "ExecutionStarted"},
		{ID: 2, Type: "TaskStateEntered", StateName: "ProcessGranuleECS"},
		{ID: 3, Type: "TaskFailed", PreviousEventID: 2, FailedDetails: `{"error":"States.TaskFailed","cause":"exited","resource":"runTask.sync","resourceType":"ecs"}`},
	}}}
	m, err := Unwrap(context.Background(), event(t, "FAILED", inputMsg, ""), sfn, nil)
	if err != nil {
		t.Fatal(err)
	}
	if m.Source != "execution history (step ProcessGranuleECS)" || m.JSON.Get("exception.resourceType").String() != "ecs" ||
		m.JSON.Get("exception.failedExecutionStepName").String() != "ProcessGranuleECS" {
		t.Errorf("a TaskFailed step: source %q, message %s", m.Source, m.JSON.Raw)
	}
}
