// Package fakelambda is a Lambda endpoint for tests: the REST-JSON API the
// SDK speaks (/2015-03-31/...) for function configurations and event source
// mappings, with RevisionId preconditions, scripted LastUpdateStatus
// sequences and the service's error shapes.
package fakelambda

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// Function is one function's state.
type Function struct {
	Name       string
	Env        map[string]string
	RevisionID string
	// UpdateStatuses are the LastUpdateStatus values the reads after an
	// update return one after the other (the last one repeats); empty:
	// Successful at once.
	UpdateStatuses []string
	UpdateReason   string // LastUpdateStatusReason once Failed
	reads          int    // reads since the last update
	updated        bool
}

// Mapping is one event source mapping.
type Mapping struct {
	UUID, Function, EventSourceARN string
	State                          string // Enabled or Disabled
	BatchSize                      int
	MaxConcurrency                 int // 0: not set
}

// Server is the fake endpoint.
type Server struct {
	URL string
	// BeforeUpdate, when set, runs before each UpdateFunctionConfiguration
	// is applied (a concurrent change, say).
	BeforeUpdate func(s *Server, name string)

	mu        sync.Mutex
	functions map[string]*Function
	mappings  []*Mapping
	calls     map[string]int
	revisions int
}

// New starts a fake Lambda endpoint, closed when the test ends.
func New(t testing.TB) *Server {
	s := &Server{functions: map[string]*Function{}, calls: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// AddFunction adds (or replaces) a function.
func (s *Server) AddFunction(f Function) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f.Env == nil {
		f.Env = map[string]string{}
	}
	f.RevisionID = s.nextRevision()
	s.functions[f.Name] = &f
}

// AddMapping adds an event source mapping.
func (s *Server) AddMapping(m Mapping) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mappings = append(s.mappings, &m)
}

// Env returns a copy of a function's environment.
func (s *Server) Env(name string) map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]string{}
	for k, v := range s.functions[name].Env {
		out[k] = v
	}
	return out
}

// SetVar changes one variable as another operator would: a new revision.
// Call it from BeforeUpdate (the lock is held there) or from the test.
func (s *Server) SetVar(name, key, value string) {
	f := s.functions[name]
	f.Env[key] = value
	f.RevisionID = s.nextRevision()
}

// Mapping returns a copy of the mapping with this UUID.
func (s *Server) Mapping(uuid string) Mapping {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range s.mappings {
		if m.UUID == uuid {
			return *m
		}
	}
	return Mapping{}
}

// Calls returns how many times an operation was called.
func (s *Server) Calls(op string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[op]
}

func (s *Server) nextRevision() string {
	s.revisions++
	return fmt.Sprintf("rev-%04d", s.revisions)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := strings.TrimPrefix(r.URL.EscapedPath(), "/2015-03-31/")
	switch {
	case strings.HasPrefix(p, "functions/") && strings.HasSuffix(p, "/configuration"):
		name, _ := url.PathUnescape(strings.TrimSuffix(strings.TrimPrefix(p, "functions/"), "/configuration"))
		if i := strings.LastIndex(name, ":function:"); i >= 0 { // an ARN
			name = name[i+len(":function:"):]
		}
		f, ok := s.functions[name]
		if !ok {
			fail(w, 404, "ResourceNotFoundException", "Function not found: "+name)
			return
		}
		switch r.Method {
		case http.MethodGet:
			s.calls["GetFunctionConfiguration"]++
			reply(w, s.config(f, true))
		case http.MethodPut:
			s.calls["UpdateFunctionConfiguration"]++
			var in struct {
				Environment *struct{ Variables map[string]string }
				RevisionId  string
			}
			if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
				fail(w, 400, "InvalidParameterValueException", err.Error())
				return
			}
			if s.BeforeUpdate != nil {
				s.BeforeUpdate(s, name)
			}
			if f.status() == "InProgress" {
				fail(w, 409, "ResourceConflictException", "The operation cannot be performed at this time. An update is in progress for resource: "+name)
				return
			}
			if in.RevisionId != "" && in.RevisionId != f.RevisionID {
				fail(w, 412, "PreconditionFailedException", "The Revision Id provided does not match the latest Revision Id. Call the GetFunction/GetAlias API to retrieve the latest Revision Id")
				return
			}
			if in.Environment != nil {
				f.Env = map[string]string{}
				for k, v := range in.Environment.Variables {
					f.Env[k] = v
				}
			}
			f.RevisionID = s.nextRevision()
			f.updated, f.reads = true, 0
			reply(w, s.config(f, false))
		default:
			fail(w, 405, "InvalidParameterValueException", r.Method)
		}
	case p == "event-source-mappings/" || p == "event-source-mappings":
		s.calls["ListEventSourceMappings"]++
		fn := r.URL.Query().Get("FunctionName")
		if i := strings.LastIndex(fn, ":function:"); i >= 0 {
			fn = fn[i+len(":function:"):]
		}
		if _, ok := s.functions[fn]; !ok && fn != "" {
			fail(w, 404, "ResourceNotFoundException", "Function not found: "+fn)
			return
		}
		var list []map[string]any
		for _, m := range s.mappings {
			if fn == "" || m.Function == fn {
				list = append(list, mappingJSON(m))
			}
		}
		reply(w, map[string]any{"EventSourceMappings": list})
	case strings.HasPrefix(p, "event-source-mappings/") && r.Method == http.MethodPut:
		s.calls["UpdateEventSourceMapping"]++
		uuid := strings.TrimPrefix(p, "event-source-mappings/")
		var in struct {
			Enabled       *bool
			ScalingConfig *struct{ MaximumConcurrency int }
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			fail(w, 400, "InvalidParameterValueException", err.Error())
			return
		}
		for _, m := range s.mappings {
			if m.UUID != uuid {
				continue
			}
			out := mappingJSON(m)
			if in.Enabled != nil {
				if *in.Enabled {
					m.State, out["State"] = "Enabled", "Enabling"
				} else {
					m.State, out["State"] = "Disabled", "Disabling"
				}
			}
			if in.ScalingConfig != nil {
				m.MaxConcurrency = in.ScalingConfig.MaximumConcurrency
				out["ScalingConfig"] = map[string]any{"MaximumConcurrency": m.MaxConcurrency}
			}
			reply(w, out)
			return
		}
		fail(w, 404, "ResourceNotFoundException", "The resource you requested does not exist. (Service: Lambda; Status Code: 404; Error Code: ResourceNotFoundException)")
	default:
		fail(w, 404, "UnknownOperationException", "fakelambda does not serve "+r.Method+" "+p)
	}
}

// config is the FunctionConfiguration JSON; a read moves the scripted
// LastUpdateStatus on.
func (s *Server) config(f *Function, read bool) map[string]any {
	status, reason := f.status(), ""
	switch {
	case !read: // an update's own reply
		status = "InProgress"
	case f.updated:
		f.reads++
	}
	if status == "Failed" {
		reason = f.UpdateReason
	}
	out := map[string]any{
		"FunctionName": f.Name, "FunctionArn": "arn:aws:lambda:us-east-1:123456789012:function:" + f.Name,
		"RevisionId": f.RevisionID, "State": "Active", "LastUpdateStatus": status,
		"Environment": map[string]any{"Variables": f.Env},
	}
	if reason != "" {
		out["LastUpdateStatusReason"] = reason
	}
	return out
}

// status is the LastUpdateStatus the next read returns.
func (f *Function) status() string {
	if !f.updated || len(f.UpdateStatuses) == 0 {
		return "Successful"
	}
	return f.UpdateStatuses[min(f.reads, len(f.UpdateStatuses)-1)]
}

func mappingJSON(m *Mapping) map[string]any {
	out := map[string]any{"UUID": m.UUID, "FunctionArn": "arn:aws:lambda:us-east-1:123456789012:function:" + m.Function,
		"EventSourceArn": m.EventSourceARN, "State": m.State, "BatchSize": m.BatchSize}
	if m.MaxConcurrency > 0 {
		out["ScalingConfig"] = map[string]any{"MaximumConcurrency": m.MaxConcurrency}
	}
	return out
}

func reply(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

func fail(w http.ResponseWriter, code int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-ErrorType", typ)
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]string{"Type": "User", "message": msg})
}
