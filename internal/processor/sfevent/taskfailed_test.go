package sfevent

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/deadletter/deadletter/internal/testsupport"
)

// A workflow that failed in an ECS task (a TaskFailed event, not a
// Lambda's or an activity's): its failed step's output, which holds the
// granules the step worked on, is the message written, as Cumulus writes
// it since nasa/cumulus#4582. From the execution's input alone the
// granule was never written (or, in v21, stayed "running").
func TestAnExecutionThatFailedInAnECSTaskIsWrittenFromTheFailedStepsOutput(t *testing.T) {
	const (
		name = "ecs-failed-1"
		sm   = "arn:aws:states:us-east-1:123456789012:stateMachine:demo-Test"
		arn  = "arn:aws:states:us-east-1:123456789012:execution:demo-Test:" + name
	)
	meta := map[string]any{"execution_name": name, "state_machine": sm, "workflow_start_time": 1709251200000}
	collection := map[string]any{"name": "MOD09GQ", "version": "006"}
	provider := map[string]any{"id": "LPDAAC_HTTPS", "protocol": "https", "host": "e4ftl01.cr.usgs.gov"}
	input, _ := json.Marshal(map[string]any{"cumulus_meta": meta,
		"meta": map[string]any{"collection": collection, "provider": provider, "workflow_name": "Test"}, "payload": map[string]any{}})
	stepOut, _ := json.Marshal(map[string]any{"cumulus_meta": meta,
		"meta":      map[string]any{"collection": collection, "provider": provider, "workflow_name": "Test"},
		"payload":   map[string]any{"granules": []any{map[string]any{"granuleId": "MOD09GQ.ECS.task.failed", "dataType": "MOD09GQ", "version": "006", "files": []any{}}}},
		"exception": map[string]any{"Error": "States.TaskFailed"}})
	ev := func(v map[string]any) json.RawMessage { b, _ := json.Marshal(v); return b }
	history := []json.RawMessage{
		ev(map[string]any{"id": 1, "previousEventId": 0, "type": "ExecutionStarted", "executionStartedEventDetails": map[string]any{"input": string(input)}}),
		ev(map[string]any{"id": 2, "previousEventId": 1, "type": "TaskStateEntered", "stateEnteredEventDetails": map[string]any{"name": "ProcessGranuleECS", "input": string(input)}}),
		ev(map[string]any{"id": 3, "previousEventId": 2, "type": "TaskScheduled"}),
		ev(map[string]any{"id": 4, "previousEventId": 3, "type": "TaskFailed", "taskFailedEventDetails": map[string]any{
			"error": "States.TaskFailed", "cause": "Essential container in task exited", "resource": "runTask.sync", "resourceType": "ecs"}}),
		ev(map[string]any{"id": 5, "previousEventId": 4, "type": "TaskStateExited", "stateExitedEventDetails": map[string]any{"name": "ProcessGranuleECS", "output": string(stepOut)}}),
		ev(map[string]any{"id": 6, "previousEventId": 5, "type": "ExecutionFailed"}),
	}
	start, stop := float64(1709251200000), float64(1709251205000)
	sfn := testsupport.NewSFNFake(t, map[string]testsupport.SFNExecution{arn: {StateMachineArn: sm, Name: name, Status: "FAILED",
		StartDate: &start, StopDate: &stop, History: history}})
	dbURL := testsupport.NewCumulusDatabase(t, testsupport.Seed3Seed(t))
	dlq := &sqsRecorder{}
	h := testHandler(t, dbURL, sfn, dlq)

	body, _ := json.Marshal(map[string]any{
		"version": "0", "id": "ev-" + name, "detail-type": "Step Functions Execution Status Change", "source": "aws.states",
		"time": "2024-03-01T00:00:05Z", "region": "us-east-1",
		"detail": map[string]any{"executionArn": arn, "stateMachineArn": sm, "name": name, "status": "FAILED",
			"startDate": 1709251200000, "stopDate": 1709251205000, "input": string(input), "output": nil},
	})
	if ids := failedIDs(t, h, sqsEvent(sqsRecord("m-ecs", string(body)))); len(ids) != 0 {
		t.Fatalf("batch item failures %v, want none", ids)
	}
	if len(dlq.bodies) != 0 {
		t.Fatalf("the message was dead-lettered: %s", dlq.bodies[0])
	}
	if sfn.Calls("GetExecutionHistory") == 0 {
		t.Fatal("the execution history was never read")
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var status, step string
	err = conn.QueryRow(ctx, `SELECT g.status, coalesce(g.error->>'failedExecutionStepName', '') FROM granules g WHERE g.granule_id = 'MOD09GQ.ECS.task.failed'`).Scan(&status, &step)
	if err != nil {
		t.Fatalf("the granule of the failed ECS step's output was not written: %v", err)
	}
	if status != "failed" || step != "ProcessGranuleECS" {
		t.Errorf("granule status %q, error's failed step %q; want failed and ProcessGranuleECS", status, step)
	}
}
