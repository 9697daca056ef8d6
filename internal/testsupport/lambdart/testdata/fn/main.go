// Command fn is the test function of package lambdart. Its behaviour is
// driven by its environment and by the bodies of the SQS records it gets:
//
//	fail       reported in batchItemFailures
//	fail-once  reported while ApproximateReceiveCount is 1
//	bad-id     reports an itemIdentifier that is not in the batch
//	error      the handler returns an error
//	crash      os.Exit(3) mid-batch
//	panic      panics (aws-lambda-go reports it, then the process exits)
//	crash-once os.Exit(3) while ApproximateReceiveCount is 1
//	sleep      sleeps SLEEP_MS (default 300) ms, ignoring the deadline
//	alloc      allocates and touches ALLOC_MB (default 64) MiB
//	anything else succeeds
//
// A payload without "Records" is echoed back. FAIL_INIT set: the process
// exits before lambda.Start, naming the variable and its value.
// INIT_ERROR_POST set: it posts its value to /runtime/init/error and exits.
// Each record is logged as one JSON line {"msg":"record",...,"record":{...}}.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
)

var (
	logger = slog.New(slog.NewJSONHandler(os.Stdout, nil))
	keep   [][]byte
)

func main() {
	if v, ok := os.LookupEnv("FAIL_INIT"); ok {
		fmt.Fprintf(os.Stderr, "fn: bad environment: FAIL_INIT=%q is not allowed\n", v)
		os.Exit(2)
	}
	if v, ok := os.LookupEnv("INIT_ERROR_POST"); ok {
		body, _ := json.Marshal(map[string]string{"errorType": "Runtime.InvalidConfig", "errorMessage": v})
		url := "http://" + os.Getenv("AWS_LAMBDA_RUNTIME_API") + "/2018-06-01/runtime/init/error"
		resp, err := http.Post(url, "application/json", bytes.NewReader(body))
		if err == nil {
			resp.Body.Close()
		}
		os.Exit(1)
	}
	logger.Info("init", "pid", os.Getpid())
	lambda.Start(handle)
}

func handle(ctx context.Context, payload json.RawMessage) (any, error) {
	var probe struct {
		Records json.RawMessage `json:"Records"`
	}
	if json.Unmarshal(payload, &probe) != nil || probe.Records == nil {
		return payload, nil
	}
	var ev events.SQSEvent
	if err := json.Unmarshal(payload, &ev); err != nil {
		return nil, err
	}
	lc, _ := lambdacontext.FromContext(ctx)
	deadline, _ := ctx.Deadline()
	resp := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
	for _, r := range ev.Records {
		logger.Info("record", "messageId", r.MessageId, "body", r.Body, "record", r,
			"requestId", lc.AwsRequestID, "functionArn", lc.InvokedFunctionArn, "deadlineMs", deadline.UnixMilli())
		first := r.Attributes["ApproximateReceiveCount"] == "1"
		switch r.Body {
		case "fail":
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: r.MessageId})
		case "fail-once":
			if first {
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: r.MessageId})
			}
		case "bad-id":
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: "not-in-batch"})
		case "error":
			return nil, errors.New("record " + r.MessageId + " asked for an error")
		case "crash":
			os.Exit(3)
		case "panic":
			panic("record " + r.MessageId + " panicked")
		case "crash-once":
			if first {
				os.Exit(3)
			}
		case "sleep":
			time.Sleep(time.Duration(envInt("SLEEP_MS", 300)) * time.Millisecond)
		case "alloc":
			b := make([]byte, envInt("ALLOC_MB", 64)<<20)
			for i := 0; i < len(b); i += 4096 {
				b[i] = 1
			}
			keep = append(keep, b)
		}
	}
	logger.Info("summary", "records", len(ev.Records), "failures", len(resp.BatchItemFailures))
	return resp, nil
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return n
	}
	return def
}
