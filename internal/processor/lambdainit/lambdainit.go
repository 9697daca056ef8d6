// Package lambdainit reports a processor's failed cold start. aws-lambda-go
// has no call for the Runtime API's init error: a bootstrap that only exits
// is reported by Lambda as "Runtime.ExitError" with the reason in the log
// alone. Fail posts the reason to /runtime/init/error first, so that the
// invocation's error names it too.
package lambdainit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

// ErrorType is the error type a failed cold start is reported with.
const ErrorType = "Runtime.InitError"

// Fail reports err as the init error of the function (when it runs under
// a Lambda Runtime API, AWS_LAMBDA_RUNTIME_API), writes it on stderr (the
// function's log) and exits with status 1.
func Fail(err error) {
	fmt.Fprintln(os.Stderr, err)
	if api := os.Getenv("AWS_LAMBDA_RUNTIME_API"); api != "" {
		if rerr := Report(api, err); rerr != nil {
			fmt.Fprintf(os.Stderr, "report the init error to the runtime API: %v\n", rerr)
		}
	}
	os.Exit(1)
}

// Report posts err to the Runtime API at api (host:port) as the init error.
func Report(api string, err error) error {
	body, _ := json.Marshal(map[string]any{"errorMessage": err.Error(), "errorType": ErrorType})
	req, rerr := http.NewRequest(http.MethodPost, "http://"+api+"/2018-06-01/runtime/init/error", bytes.NewReader(body))
	if rerr != nil {
		return rerr
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Lambda-Runtime-Function-Error-Type", ErrorType)
	resp, rerr := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if rerr != nil {
		return rerr
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("runtime API answered %s", resp.Status)
	}
	return nil
}
