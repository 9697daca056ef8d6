package recovery

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// deep is 10 million arrays, one inside the other: 20 MB that gjson's
// validator, which recurses once per level, turned into a fatal stack
// overflow.
var deep = strings.Repeat("[", 10_000_000) + strings.Repeat("]", 10_000_000)

// JSON that recover reads beyond the archive object (a replace payload from
// S3, the failed step's output from the execution history, a UMM-G file) is
// refused when nested deeper than 512 levels, with a reason.
func TestUnwrapRefusesDeepJSON(t *testing.T) {
	objs := objectsFake{"s3://sys/events/deep.json": deep}
	msg := `{"cumulus_meta":{"execution_name":"e1"},"replace":{"Bucket":"sys","Key":"events/deep.json","TargetPath":"$"}}`
	_, err := Unwrap(context.Background(), event(t, "RUNNING", msg, ""), nil, objs)
	var ue *UnwrapError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "s3://sys/events/deep.json is nested deeper than 512 levels") {
		t.Errorf("replace payload: %v", err)
	}

	stepOut := `{"a":` + deep + `}`
	sfn := &sfnFake{history: map[string][]HistoryEvent{execArn: {
		{ID: 2, Type: "TaskStateEntered", StateName: "SyncGranule"},
		{ID: 3, Type: "LambdaFunctionFailed", PreviousEventID: 2, FailedDetails: `{"error":"Boom"}`},
		{ID: 4, Type: "TaskStateExited", PreviousEventID: 3, Output: &stepOut},
	}}}
	_, err = Unwrap(context.Background(), event(t, "FAILED", inputMsg, ""), sfn, nil)
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "failed step SyncGranule in the execution history is nested deeper than 512 levels") {
		t.Errorf("failed step output: %v", err)
	}

	if _, err := ummgTemporal([]byte(deep)); err == nil || !strings.Contains(err.Error(), "nested deeper than 512 levels") {
		t.Errorf("UMM-G: %v", err)
	}
	xml := strings.Repeat("<a>", 100_000) + strings.Repeat("</a>", 100_000)
	if _, err := parseXML([]byte(xml)); err == nil || !strings.Contains(err.Error(), "nested deeper than 512 levels") {
		t.Errorf("XML: %v", err)
	}
}
