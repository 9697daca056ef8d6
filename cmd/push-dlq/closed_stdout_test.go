package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/deadletter/deadletter/internal/pushpolicy"
	"github.com/deadletter/deadletter/internal/sqsmove"
	"github.com/deadletter/deadletter/internal/testsupport"
	"github.com/deadletter/deadletter/internal/testsupport/lambdart"
)

// The function's stdout (its log) is a pipe nobody reads any more. Before,
// the first log line, written after the sends and before the response,
// killed the process with SIGPIPE (Go's rule for fd 1 when SIGPIPE is not
// handled): the batch came back whole and was sent again, at every
// redelivery, without end. Now a log line that cannot be written is lost,
// the function answers, and the message is in its priority queue once.
func TestClosedStdoutDoesNotKillTheFunction(t *testing.T) {
	endpoint := testsupport.SQSEndpoint(t)
	c := testsupport.SQSClientAt(endpoint)
	dlq, base := testsupport.NewPushQueues(t, c, "so", 1)
	body := `{"action":"push","priority":1,"createdAt":1763109600000,"errorCode":1004,"errorMessage":"x","n":"closed-stdout"}`
	testsupport.SendBodies(t, c, dlq, []string{body, "not json"}, testsupport.PushAttributes)
	msgs := testsupport.Receive(t, c, dlq, 2, 600)
	payload, _ := json.Marshal(lambdart.NewSQSEvent("arn:aws:sqs:us-east-1:000000000000:"+sqsmove.Name(dlq), "us-east-1", msgs))

	bin := filepath.Join(t.TempDir(), "bootstrap")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	responses := make(chan []byte, 1)
	done := make(chan struct{})
	served := false
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/2018-06-01/runtime/invocation/next":
			if served {
				<-done // no second event
				return
			}
			served = true
			w.Header().Set("Lambda-Runtime-Aws-Request-Id", "req-1")
			w.Header().Set("Lambda-Runtime-Deadline-Ms", strconv.FormatInt(time.Now().Add(time.Minute).UnixMilli(), 10))
			w.Header().Set("Lambda-Runtime-Invoked-Function-Arn", "arn:aws:lambda:us-east-1:000000000000:function:push-dlq")
			w.Write(payload)
		case strings.HasSuffix(r.URL.Path, "/response"):
			b, _ := io.ReadAll(r.Body)
			responses <- b
			w.WriteHeader(http.StatusAccepted)
		default:
			b, _ := io.ReadAll(r.Body)
			t.Logf("%s: %s", r.URL.Path, b)
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	defer api.Close()
	defer close(done) // before api.Close, which waits for the held /next

	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	pr.Close() // nobody reads the log
	defer pw.Close()
	cmd := exec.Command(bin)
	cmd.Env = []string{"AWS_LAMBDA_RUNTIME_API=" + strings.TrimPrefix(api.URL, "http://"), "AWS_REGION=us-east-1",
		"AWS_ACCESS_KEY_ID=" + testsupport.AccessKey, "AWS_SECRET_ACCESS_KEY=" + testsupport.SecretKey,
		"AWS_EC2_METADATA_DISABLED=true", "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null",
		"AWS_ENDPOINT_URL_SQS=" + endpoint, "_HANDLER=bootstrap",
		pushpolicy.EnvDLQURL + "=" + dlq, pushpolicy.EnvBaseURL + "=" + base,
		pushpolicy.EnvStartAt + "=2025-11-14T08:30:00Z", pushpolicy.EnvEndAt + "=2025-11-14T09:00:00Z", pushpolicy.EnvErrorCodes + "=1004"}
	cmd.Stdout = pw
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer cmd.Process.Kill()

	select {
	case resp := <-responses:
		if !bytes.Contains(resp, []byte(`"batchItemFailures":[]`)) {
			t.Errorf("response %s", resp)
		}
	case err := <-exited:
		t.Fatalf("the function died before it answered (%v); stderr: %s", err, stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("no response; stderr: %s", stderr.String())
	}
	// As the event source mapping does: delete what the response did not
	// report (everything).
	for _, m := range msgs {
		if _, err := c.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(dlq), ReceiptHandle: m.ReceiptHandle}); err != nil {
			t.Fatal(err)
		}
	}
	got := testsupport.Drain(t, c, pushpolicy.TargetURL(base, 1), 2*time.Second)
	if len(got) != 1 || aws.ToString(got[0].Body) != body {
		t.Errorf("P1 holds %d messages, want the one once", len(got))
	}
}
