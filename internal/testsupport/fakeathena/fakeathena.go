// Package fakeathena is an Athena endpoint for tests: the AWS JSON 1.1
// protocol the SDK speaks (X-Amz-Target: AmazonAthena.<Action>), with
// scripted query executions (states, bytes scanned, rows), result paging,
// throttling, and StopQueryExecution.
package fakeathena

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Execution scripts one query: the states its polls return one after the
// other (the last one repeats), the bytes scanned at each poll, and its
// result.
type Execution struct {
	States  []string // QUEUED, RUNNING, SUCCEEDED, FAILED, CANCELLED
	Scanned []int64
	Reason  string // StateChangeReason
	Columns []string
	Rows    [][]*string // nil values are NULL
}

// Started is one StartQueryExecution as received.
type Started struct {
	ID, SQL, Workgroup, Database string
}

// Server is the fake endpoint.
type Server struct {
	URL string
	// Plan scripts the execution of each query started (required).
	Plan func(sql string) Execution
	// PageSize caps the rows per GetQueryResults page (besides MaxResults).
	PageSize int

	mu       sync.Mutex
	started  []Started
	stopped  []string
	calls    map[string]int
	throttle map[string]int
	execs    map[string]*running
}

type running struct {
	Execution
	polls     int
	cancelled bool
	submitted time.Time
}

// New starts a fake Athena endpoint, closed when the test ends.
func New(t testing.TB, plan func(sql string) Execution) *Server {
	s := &Server{Plan: plan, calls: map[string]int{}, throttle: map[string]int{}, execs: map[string]*running{}}
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// Throttle makes the next n calls of action fail with a
// ThrottlingException (the SDK retries them).
func (s *Server) Throttle(action string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.throttle[action] += n
}

// Started returns the queries started so far.
func (s *Server) Started() []Started {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Started(nil), s.started...)
}

// Stopped returns the ids StopQueryExecution was called with.
func (s *Server) Stopped() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.stopped...)
}

// Calls returns how many times action was called (throttled calls too).
func (s *Server) Calls(action string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[action]
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	action := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "AmazonAthena.")
	var in map[string]any
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		fail(w, 400, "InvalidRequestException", "bad JSON: "+err.Error())
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[action]++
	if s.throttle[action] > 0 {
		s.throttle[action]--
		fail(w, 400, "ThrottlingException", "Rate exceeded")
		return
	}
	str := func(k string) string { v, _ := in[k].(string); return v }
	switch action {
	case "StartQueryExecution":
		id := fmt.Sprintf("q-%04d", len(s.started)+1)
		db := ""
		if c, ok := in["QueryExecutionContext"].(map[string]any); ok {
			db, _ = c["Database"].(string)
		}
		s.started = append(s.started, Started{ID: id, SQL: str("QueryString"), Workgroup: str("WorkGroup"), Database: db})
		s.execs[id] = &running{Execution: s.Plan(str("QueryString")), submitted: time.Now()}
		reply(w, map[string]any{"QueryExecutionId": id})
	case "GetQueryExecution":
		e, ok := s.execs[str("QueryExecutionId")]
		if !ok {
			fail(w, 400, "InvalidRequestException", "QueryExecution "+str("QueryExecutionId")+" was not found")
			return
		}
		state, scanned := e.at(e.polls)
		e.polls++
		status := map[string]any{"State": state, "SubmissionDateTime": float64(e.submitted.Unix())}
		if state == "FAILED" || state == "CANCELLED" {
			status["StateChangeReason"] = e.Reason
		}
		reply(w, map[string]any{"QueryExecution": map[string]any{
			"QueryExecutionId": str("QueryExecutionId"),
			"Status":           status,
			"Statistics":       map[string]any{"DataScannedInBytes": scanned},
		}})
	case "StopQueryExecution":
		id := str("QueryExecutionId")
		s.stopped = append(s.stopped, id)
		if e, ok := s.execs[id]; ok {
			e.cancelled = true
		}
		reply(w, map[string]any{})
	case "GetQueryResults":
		e, ok := s.execs[str("QueryExecutionId")]
		if !ok {
			fail(w, 400, "InvalidRequestException", "QueryExecution "+str("QueryExecutionId")+" was not found")
			return
		}
		if state, _ := e.at(e.polls - 1); state != "SUCCEEDED" {
			fail(w, 400, "InvalidRequestException", "Query has not yet finished. Current state: "+state)
			return
		}
		// The header row first, as Athena returns a SELECT's results.
		header := make([]*string, len(e.Columns))
		for i := range e.Columns {
			header[i] = &e.Columns[i]
		}
		all := append([][]*string{header}, e.Rows...)
		from := 0
		if t := str("NextToken"); t != "" {
			n, err := strconv.Atoi(strings.TrimPrefix(t, "page-"))
			if err != nil || n <= 0 || n > len(all) {
				fail(w, 400, "InvalidRequestException", "bad NextToken")
				return
			}
			from = n
		}
		size := 1000
		if m, ok := in["MaxResults"].(float64); ok && int(m) > 0 {
			size = int(m)
		}
		if s.PageSize > 0 {
			size = min(size, s.PageSize)
		}
		to := min(from+size, len(all))
		rows := make([]map[string]any, 0, to-from)
		for _, rw := range all[from:to] {
			data := make([]map[string]any, len(rw))
			for i, v := range rw {
				data[i] = map[string]any{}
				if v != nil {
					data[i]["VarCharValue"] = *v
				}
			}
			rows = append(rows, map[string]any{"Data": data})
		}
		cols := make([]map[string]any, len(e.Columns))
		for i, c := range e.Columns {
			cols[i] = map[string]any{"Name": c, "Label": c, "Type": "varchar"}
		}
		out := map[string]any{"ResultSet": map[string]any{"Rows": rows, "ResultSetMetadata": map[string]any{"ColumnInfo": cols}}}
		if to < len(all) {
			out["NextToken"] = "page-" + strconv.Itoa(to)
		}
		reply(w, out)
	default:
		fail(w, 400, "UnknownOperationException", "fakeathena does not serve "+action)
	}
}

// at is the state and scan at poll i; a stopped query is CANCELLED.
func (e *running) at(i int) (string, int64) {
	if i < 0 {
		i = 0
	}
	var scanned int64
	if len(e.Scanned) > 0 {
		scanned = e.Scanned[min(i, len(e.Scanned)-1)]
	}
	if e.cancelled {
		return "CANCELLED", scanned
	}
	if len(e.States) == 0 {
		return "SUCCEEDED", scanned
	}
	return e.States[min(i, len(e.States)-1)], scanned
}

func reply(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	json.NewEncoder(w).Encode(v)
}

func fail(w http.ResponseWriter, code int, typ, msg string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.Header().Set("X-Amzn-ErrorType", typ)
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]string{"__type": typ, "Message": msg})
}
