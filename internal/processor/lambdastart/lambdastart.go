// Package lambdastart starts a processor under the Lambda runtime, and
// reports a failed cold start (a bad environment variable, an unreachable
// database) as an init error that names the cause, instead of a bare exit.
package lambdastart

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
)

// Run builds the handler with build (a function lambda.Start accepts, such
// as a method value) and serves it; it never returns.
//
// A log line that cannot be written (stdout a pipe nobody reads any more)
// is lost rather than fatal: by default Go kills a process with SIGPIPE on
// such a write to stdout, and a processor logs after its side effects and
// before its response, so the batch would come back and be done again, at
// every redelivery.
func Run(name string, build func(context.Context) (any, error)) {
	signal.Ignore(syscall.SIGPIPE)
	h, err := build(context.Background())
	if err != nil {
		Fail(name, err)
	}
	lambda.Start(h)
}

// Fail reports err as the function's init error, on stderr (the function's
// log) and to the runtime API when there is one, then exits 1.
func Fail(name string, err error) {
	msg := fmt.Sprintf("%s: cold start failed: %v", name, err)
	fmt.Fprintln(os.Stderr, msg)
	if api := os.Getenv("AWS_LAMBDA_RUNTIME_API"); api != "" {
		body, _ := json.Marshal(map[string]any{"errorMessage": msg, "errorType": "Runtime.InitError"})
		req, rerr := http.NewRequest(http.MethodPost, "http://"+api+"/2018-06-01/runtime/init/error", bytes.NewReader(body))
		if rerr == nil {
			req.Header.Set("Lambda-Runtime-Function-Error-Type", "Runtime.InitError")
			req.Header.Set("Content-Type", "application/json")
			c := &http.Client{Timeout: 2 * time.Second}
			if resp, herr := c.Do(req); herr == nil {
				resp.Body.Close()
			}
		}
	}
	os.Exit(1)
}
