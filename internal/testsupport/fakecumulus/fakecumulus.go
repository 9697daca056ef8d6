// Package fakecumulus is a Cumulus API for tests: the two endpoints dead
// letter recovery uses, with bearer-token checks, injected 5xx answers, and
// an async operation that really runs v21's process-s3-dead-letter-archive
// algorithm over the S3 prefix it is given (list, parse, write or fail,
// delete the written, copy the failed to failed-sqs/<date>/<basename> and
// delete them, leave the unparseable where they are). Whether a message's
// write succeeds is the test's to say.
package fakecumulus

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/dla"
)

// Server is the fake API.
type Server struct {
	URL   string
	Token string
	// Stack is the deployment's stackName (failed-sqs keys are under it).
	Stack string
	// Open returns the bucket the operation reads.
	Open func(bucket string) archive.Store
	// Written says whether Cumulus's writeRecords would succeed for a
	// message (nil: every one does).
	Written func(key string, raw []byte) bool
	// FailPosts answers the next n POSTs with a 503 before doing anything.
	FailPosts int
	// FailOperation ends every operation TASK_FAILED, having processed
	// nothing.
	FailOperation bool
	// RunningPolls is how many GETs see RUNNING before the result.
	RunningPolls int

	mu    sync.Mutex
	ops   map[string]*operation
	posts []map[string]any
}

type operation struct {
	polls  int
	done   chan struct{}
	status string
	output string
}

// New starts the fake API, closed when the test ends.
func New(t testing.TB, token, stack string, open func(bucket string) archive.Store) *Server {
	s := &Server{Token: token, Stack: stack, Open: open, ops: map[string]*operation{}}
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// Posts returns the bodies of the recovery requests that started an
// operation.
func (s *Server) Posts() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]map[string]any(nil), s.posts...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer "+s.Token {
		reply(w, http.StatusUnauthorized, map[string]string{"message": "Invalid Authorization token"})
		return
	}
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/deadLetterArchive/recoverCumulusMessages":
		var body map[string]any
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			reply(w, http.StatusBadRequest, map[string]string{"message": "invalid payload"})
			return
		}
		s.mu.Lock()
		if s.FailPosts > 0 {
			s.FailPosts--
			s.mu.Unlock()
			reply(w, http.StatusServiceUnavailable, map[string]string{"message": "Service Unavailable"})
			return
		}
		id := fmt.Sprintf("op-%d", len(s.posts)+1)
		s.posts = append(s.posts, body)
		op := &operation{done: make(chan struct{}), status: "RUNNING"}
		s.ops[id] = op
		s.mu.Unlock()
		bucket, _ := body["bucket"].(string)
		path, _ := body["path"].(string)
		go s.run(op, bucket, path)
		reply(w, http.StatusAccepted, map[string]any{"id": id, "status": "RUNNING", "operationType": "Dead-Letter Processing",
			"description": "Dead-Letter Processor ECS Run", "taskArn": "arn:aws:ecs:us-east-1:1:task/" + id})
	case r.Method == http.MethodGet && r.URL.Path == "/asyncOperations":
		// The list (Check's cheap authenticated call).
		reply(w, http.StatusOK, map[string]any{"meta": map[string]any{"count": len(s.ops)}, "results": []any{}})
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/asyncOperations/"):
		id := strings.TrimPrefix(r.URL.Path, "/asyncOperations/")
		s.mu.Lock()
		op, ok := s.ops[id]
		s.mu.Unlock()
		if !ok {
			reply(w, http.StatusNotFound, map[string]string{"message": "Async operation not found: " + id})
			return
		}
		s.mu.Lock()
		op.polls++
		early := op.polls <= s.RunningPolls
		s.mu.Unlock()
		status, output := "RUNNING", ""
		if !early {
			<-op.done
			status, output = op.status, op.output
		}
		out := map[string]any{"id": id, "status": status, "operationType": "Dead-Letter Processing"}
		if output != "" {
			out["output"] = output
		}
		reply(w, http.StatusOK, out)
	default:
		reply(w, http.StatusNotFound, map[string]string{"message": "not found"})
	}
}

// run is process-s3-dead-letter-archive over bucket/path.
func (s *Server) run(op *operation, bucket, path string) {
	defer close(op.done)
	if s.FailOperation {
		op.status, op.output = "TASK_FAILED", `{"name":"Error","message":"ECS task failed: container exited 1"}`
		return
	}
	ctx := context.Background()
	store := s.Open(bucket)
	var keys []string
	err := store.List(ctx, path, false, func(e archive.Entry) error { keys = append(keys, e.Key); return nil })
	if err != nil {
		op.status, op.output = "RUNNER_FAILED", fmt.Sprintf(`{"message":%q}`, err.Error())
		return
	}
	var out struct {
		Succeeded []string `json:"processingSucceededKeys"`
		Failed    []string `json:"processingFailedKeys"`
	}
	out.Succeeded, out.Failed = []string{}, []string{}
	for _, k := range keys {
		raw, err := store.Get(ctx, k)
		if err != nil || !json.Valid(raw) {
			continue // v21: the promise rejects; not moved, not deleted, not counted
		}
		if s.Written == nil || s.Written(k, raw) {
			out.Succeeded = append(out.Succeeded, k)
			continue
		}
		out.Failed = append(out.Failed, k)
		// getDLAFailureKey: moment.utc(time), as near as this reads it
		// (a form moment reads and this does not dates it today).
		date, _ := dla.CumulusFailureDate(gjson.GetBytes(raw, "time"), time.Now())
		failed := dla.Layout{Stack: s.Stack}.DatePrefix(dla.AreaFailed, date) + k[strings.LastIndex(k, "/")+1:]
		if err := store.Put(ctx, failed, raw); err == nil { // CopyObject: replaces what is there
			_ = store.Delete(ctx, k)
		}
	}
	if len(out.Succeeded) > 0 {
		_, _ = store.DeleteMany(ctx, out.Succeeded)
	}
	b, _ := json.Marshal(out)
	op.status, op.output = "SUCCEEDED", string(b)
}

func reply(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}
