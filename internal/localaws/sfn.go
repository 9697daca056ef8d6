// Package localaws holds local stand-ins for AWS services, and clients
// pointed at local servers, for the tests and the benchmarks' binaries
// (internal/bench): a Step Functions endpoint serving recorded executions.
// Nothing here reaches AWS, and nothing here imports testing, so that a
// benchmark binary does not carry the test support.
package localaws

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
)

// SFNExecution is one execution the Step Functions fake knows, in the shape
// of the fixtures' sfn.json (dates and event timestamps in epoch ms; events
// as the AWS JSON protocol spells them).
type SFNExecution struct {
	StateMachineArn string            `json:"stateMachineArn"`
	Name            string            `json:"name"`
	Status          string            `json:"status"`
	StartDate       *float64          `json:"startDate"`
	StopDate        *float64          `json:"stopDate"`
	History         []json.RawMessage `json:"history"`
}

// SFNServer is a Step Functions endpoint speaking the AWS JSON 1.0
// protocol (X-Amz-Target dispatch, __type errors), for the real SDK client:
// DescribeExecution and GetExecutionHistory (paginated). Executions it does
// not know answer ExecutionDoesNotExist, like an execution whose history
// expired. scripts/bench-recover serves it from
// internal/bench/recovershape; tests, through testsupport.NewSFNFake.
type SFNServer struct {
	mu  sync.Mutex
	exs map[string]SFNExecution
	// Calls counts requests by operation.
	calls map[string]int
	// Fail, when set, answers every call of that operation with a 500.
	Fail string
}

// NewSFNServer serves executions (by ARN).
func NewSFNServer(executions map[string]SFNExecution) *SFNServer {
	return &SFNServer{exs: executions, calls: map[string]int{}}
}

// Calls returns how many calls of op were made.
func (f *SFNServer) Calls(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[op]
}

func secs(ms *float64) any {
	if ms == nil {
		return nil
	}
	return *ms / 1000
}

// ServeHTTP answers one Step Functions call.
func (f *SFNServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	op := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "AWSStepFunctions.")
	f.mu.Lock()
	f.calls[op]++
	ex, known := map[string]SFNExecution{}, false
	var in struct {
		ExecutionArn string `json:"executionArn"`
		NextToken    string `json:"nextToken"`
		MaxResults   int    `json:"maxResults"`
	}
	body, _ := io.ReadAll(r.Body)
	_ = json.Unmarshal(body, &in)
	if e, ok := f.exs[in.ExecutionArn]; ok {
		ex[in.ExecutionArn], known = e, true
	}
	fail := f.Fail == op
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	errorOut := func(code int, typ, msg string) {
		w.Header().Set("X-Amzn-ErrorType", typ)
		w.WriteHeader(code)
		_, _ = io.WriteString(w, AWSJSONError(typ, msg))
	}
	if fail {
		errorOut(500, "InternalServerError", "injected failure")
		return
	}
	if !known && (op == "DescribeExecution" || op == "GetExecutionHistory") {
		errorOut(400, "ExecutionDoesNotExist", "Execution Does Not Exist: '"+in.ExecutionArn+"'")
		return
	}
	e := ex[in.ExecutionArn]
	switch op {
	case "DescribeExecution":
		out := map[string]any{"executionArn": in.ExecutionArn, "stateMachineArn": e.StateMachineArn, "name": e.Name,
			"status": e.Status}
		if e.StartDate != nil {
			out["startDate"] = secs(e.StartDate)
		}
		if e.StopDate != nil {
			out["stopDate"] = secs(e.StopDate)
		}
		_ = json.NewEncoder(w).Encode(out)
	case "GetExecutionHistory":
		start, _ := strconv.Atoi(in.NextToken)
		size := in.MaxResults
		if size <= 0 || size > 1000 {
			size = 1000
		}
		end := min(start+size, len(e.History))
		events := make([]map[string]any, 0, end-start)
		for _, raw := range e.History[start:end] {
			var ev map[string]any
			_ = json.Unmarshal(raw, &ev)
			if ts, ok := ev["timestamp"].(float64); ok {
				ev["timestamp"] = ts / 1000
			}
			events = append(events, ev)
		}
		out := map[string]any{"events": events}
		if end < len(e.History) {
			out["nextToken"] = strconv.Itoa(end)
		}
		_ = json.NewEncoder(w).Encode(out)
	default:
		errorOut(400, "UnknownOperationException", "unsupported operation "+op)
	}
}

// ReadSFN reads the executions of a fixture's sfn.json.
func ReadSFN(path string) (map[string]SFNExecution, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f struct {
		Executions map[string]SFNExecution `json:"executions"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f.Executions, nil
}

// AWSJSONError is the body of an AWS JSON protocol error (__type and
// message).
func AWSJSONError(typ, msg string) string {
	return `{"__type":"` + typ + `","message":"` + msg + `"}`
}
