package main_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// The real bootstrap with a bad variable fails its cold start: it exits 1
// before asking for an event, its log (stderr) names the variable and the
// value, and it reports the same as the init error to the Runtime API.
func TestBadEnvironmentFailsTheColdStart(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "bootstrap")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	var mu sync.Mutex
	var initErr, errType string
	next := 0
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		switch r.URL.Path {
		case "/2018-06-01/runtime/init/error":
			var e struct{ ErrorMessage, ErrorType string }
			b, _ := io.ReadAll(r.Body)
			json.Unmarshal(b, &e)
			initErr, errType = e.ErrorMessage, r.Header.Get("Lambda-Runtime-Function-Error-Type")
			w.WriteHeader(http.StatusAccepted)
		case "/2018-06-01/runtime/invocation/next":
			next++
			w.WriteHeader(http.StatusInternalServerError)
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	defer api.Close()
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "AWS_LAMBDA_RUNTIME_API="+strings.TrimPrefix(api.URL, "http://"), "AWS_REGION=us-east-1",
		"PUSH_DLQ_QUEUE_URL=https://sqs/1/push-dlq", "PUSH_QUEUE_BASE_URL=https://sqs/1/push-",
		"PROCESS_START_AT=2025-11-14T08:30:00Z", "PROCESS_END_AT=2025-11-14T09:00:00Z", "PROCESS_ERROR_CODES=1004,abc")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("exit: %v; stderr: %s", err, stderr.String())
	}
	const want = `PROCESS_ERROR_CODES="1004,abc"`
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(stderr.String(), want) || !strings.Contains(initErr, want) || errType != "Runtime.InitError" || next != 0 {
		t.Errorf("stderr %q, init error %q (%s), next called %d times", stderr.String(), initErr, errType, next)
	}
}
