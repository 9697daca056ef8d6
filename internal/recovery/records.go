package recovery

import (
	"fmt"
	"time"

	"github.com/tidwall/gjson"
)

// ExecutionRow is an executions row as buildExecutionRecord makes it. Nil
// and "" mean "not supplied": the column is left out of the insert, so an
// existing value survives the upsert.
type ExecutionRow struct {
	Arn, URL, Status                string
	CumulusVersion, WorkflowName    *string
	Tasks, Error                    string // JSON texts
	OriginalPayload, FinalPayload   string // JSON texts; one of them by status
	CreatedAt, Timestamp, UpdatedAt time.Time
	Duration                        float64
	AsyncOperationID, CollectionID  *int64
	ParentID                        *int64
}

// PdrRow is a pdrs row as generatePdrRecord makes it.
type PdrRow struct {
	Name                            string
	Status                          *string
	PANSent                         *bool
	PANMessage                      *string
	Stats                           string // JSON
	Progress                        float64
	ExecutionID                     *int64
	CollectionID, ProviderID        int64
	CreatedAt, UpdatedAt, Timestamp time.Time
	Duration                        float64
}

// executionURL is getExecutionUrlFromArn.
func executionURL(arn, region string) string {
	if region == "" {
		region = "us-east-1"
	}
	return "https://console.aws.amazon.com/states/home?region=" + region + "#/executions/details/" + arn
}

// parseException is Cumulus's parseException: nil → {}, object → itself,
// anything else → {Error: "Unknown Error", Cause: value}.
func parseException(exc gjson.Result) string {
	switch {
	case isNil(exc):
		return "{}"
	case exc.IsObject() || exc.IsArray():
		return compact(exc.Raw)
	}
	return buildObject([]kv{{"Error", `"Unknown Error"`}, {"Cause", exc.Raw}})
}

// workflowStartTime is getMessageWorkflowStartTime.
func workflowStartTime(msg Getter) (float64, error) {
	v := msg.Get("cumulus_meta.workflow_start_time")
	if !truthy(v) {
		return 0, &MessageError{Reason: "getMessageWorkflowStartTime on a message without a workflow_start_time"}
	}
	if v.Type != gjson.Number {
		return 0, &MessageError{Reason: fmt.Sprintf("cumulus_meta.workflow_start_time is %s, not epoch milliseconds", v.Raw)}
	}
	return v.Num, nil
}

// workflowDuration is getWorkflowDuration: seconds from start to stop, 0
// without a stop time.
func workflowDuration(start float64, stop gjson.Result) float64 {
	if !truthy(stop) || stop.Type != gjson.Number {
		return 0
	}
	return (stop.Num - start) / 1000
}

func optString(v gjson.Result) *string {
	if isNil(v) {
		return nil
	}
	s := jsString(v)
	return &s
}

func optJSON(v gjson.Result) string {
	if isNil(v) {
		return ""
	}
	return v.Raw
}

// BuildExecution is buildExecutionRecord.
func BuildExecution(msg Getter, now time.Time, region string, ids Lookups) (*ExecutionRow, error) {
	arn := executionArn(msg)
	start, err := workflowStartTime(msg)
	if err != nil {
		return nil, err
	}
	if arn == "" {
		return nil, &MessageError{Reason: "the execution ARN cannot be built: cumulus_meta.state_machine or execution_name is missing"}
	}
	status := msg.Get("meta.status")
	if !truthy(status) {
		return nil, &MessageError{Reason: "the message has no meta.status (the event status is not one Cumulus maps)"}
	}
	r := &ExecutionRow{
		Arn:              arn,
		URL:              executionURL(arn, region),
		Status:           jsString(status),
		CumulusVersion:   optString(msg.Get("cumulus_meta.cumulus_version")),
		WorkflowName:     optString(msg.Get("meta.workflow_name")),
		Tasks:            optJSON(msg.Get("meta.workflow_tasks")),
		Error:            parseException(msg.Get("exception")),
		CreatedAt:        msTime(start),
		Timestamp:        now,
		UpdatedAt:        now,
		Duration:         workflowDuration(start, msg.Get("cumulus_meta.workflow_stop_time")),
		AsyncOperationID: ids.AsyncOperation,
		CollectionID:     ids.Collection,
		ParentID:         ids.Parent,
	}
	if r.Status == "running" {
		r.OriginalPayload = optJSON(msg.Get("payload"))
	} else {
		r.FinalPayload = optJSON(msg.Get("payload"))
	}
	return r, nil
}

func listLen(v gjson.Result) int {
	if v.IsArray() {
		return int(v.Get("#").Int())
	}
	return 0
}

// BuildPdr is generatePdrRecord; nil when the message has no PDR.
func BuildPdr(msg Getter, now time.Time, collectionID, providerID, executionID *int64) (*PdrRow, error) {
	pdr := msg.Get("payload.pdr")
	if !truthy(pdr) {
		return nil, nil
	}
	if collectionID == nil {
		return nil, fmt.Errorf("Error: Collection reference is required for a PDR")
	}
	if providerID == nil {
		return nil, fmt.Errorf("Error: Provider reference is required for a PDR")
	}
	start, err := workflowStartTime(msg)
	if err != nil {
		return nil, err
	}
	name := pdr.Get("name")
	if !truthy(name) {
		return nil, &MessageError{Reason: "payload.pdr has no name"}
	}
	processing, completed, failed := listLen(msg.Get("payload.running")), listLen(msg.Get("payload.completed")), listLen(msg.Get("payload.failed"))
	total := processing + completed + failed
	progress := 0.0
	switch {
	case processing > 0 && total > 0:
		progress = float64(total-processing) / float64(total) * 100
	case processing == 0 && total > 0:
		progress = 100
	}
	r := &PdrRow{
		Name:         jsString(name),
		Status:       optString(msg.Get("meta.status")),
		Stats:        fmt.Sprintf(`{"processing":%d,"completed":%d,"failed":%d,"total":%d}`, processing, completed, failed, total),
		Progress:     progress,
		ExecutionID:  executionID,
		CollectionID: *collectionID,
		ProviderID:   *providerID,
		CreatedAt:    msTime(start),
		UpdatedAt:    now,
		Timestamp:    now,
		Duration:     float64(now.UnixMilli()-int64(start)) / 1000,
	}
	sent := false
	if v := pdr.Get("PANSent"); !isNil(v) {
		sent = v.Type == gjson.True
	}
	r.PANSent = &sent
	msgText := "N/A"
	if v := pdr.Get("PANmessage"); !isNil(v) {
		msgText = jsString(v)
	}
	r.PANMessage = &msgText
	return r, nil
}
