package dlawriter_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/testsupport"
	"github.com/deadletter/deadletter/internal/testsupport/lambdart"
	"github.com/tidwall/gjson"
)

// archiverEnv is the archiver's real bootstrap under the Lambda runtime
// harness, archiving into a new bucket of the test S3 server.
type archiverEnv struct {
	rt     *lambdart.Runtime
	s3c    *s3.Client
	bucket string
	proxy  *testsupport.Proxy // in front of S3, when asked for
}

// startArchiver starts the archiver with a Step Functions fake that knows
// executions, reaching S3 through a proxy when viaProxy.
func startArchiver(tb testing.TB, executions map[string]testsupport.SFNExecution, viaProxy bool) *archiverEnv {
	tb.Helper()
	a := &archiverEnv{s3c: testsupport.S3Client(tb)}
	a.bucket = testsupport.NewBucket(tb, a.s3c)
	env := map[string]string{"AWS_ENDPOINT_URL_SFN": testsupport.NewSFNFake(tb, executions).URL, "system_bucket": a.bucket, "stackName": "demo"}
	if viaProxy {
		a.proxy = testsupport.NewProxy(tb, testsupport.S3Endpoint(tb))
		env["AWS_ENDPOINT_URL_S3"] = a.proxy.URL
	}
	a.rt = lambdart.Start(tb, lambdart.Function{Bootstrap: lambdart.Build(tb, "./cmd/write-db-dlq-records-to-s3"),
		Env: lambdart.Env(lambdart.ServiceEnv(tb, "s3"), env)})
	return a
}

// TestArchiverBootstrapLosesNothing runs the real bootstrap under the
// Lambda Runtime API harness, fed by an event-source-mapping loop on
// fauxqs with ReportBatchItemFailures, writing to versitygw through a
// proxy. It sends the 150 DLQ bodies v21's writer received, kills the
// function during its second invocation (after it logged a record), and
// refuses every put of one message until the mapping has seen it fail.
// Then every message is archived exactly once: one object per message id
// (a redelivered message overwrites its own key), the queue is empty, and
// the only messages delivered more than once are those of the killed batch
// and the refused one.
func TestArchiverBootstrapLosesNothing(t *testing.T) {
	a := startArchiver(t, testsupport.LoadSFN(t, seed3+"/archive/_fixtures/sfn.json"), true)
	rt, proxy := a.rt, a.proxy

	c := testsupport.SQSClient(t)
	queue := testsupport.NewQueue(t, c, "archiver-", false)
	var bodies []string
	for _, in := range writerInputs(t) {
		var rec struct {
			Body string `json:"body"`
		}
		if err := json.Unmarshal(in.Record, &rec); err != nil {
			t.Fatal(err)
		}
		bodies = append(bodies, rec.Body)
	}
	sent := testsupport.SendBodies(t, c, queue, bodies, nil)

	// The fault on S3: every put of the victim's record is refused
	// (non-retryable) until the mapping has seen it come back failed.
	victim := sent[0]
	var mu sync.Mutex
	refusing, refused := true, 0
	proxy.SetHook(func(op string, body []byte) ([]byte, *testsupport.Reply) {
		mu.Lock()
		defer mu.Unlock()
		if op == "PutObject" && refusing && bytes.Contains(body, []byte(`"messageId":"`+victim+`"`)) {
			refused++
			return nil, &testsupport.Reply{Status: 403, Body: "<Error><Code>AccessDenied</Code><Message>refused by the test</Message></Error>"}
		}
		return nil, nil
	})
	// The fault on the function: killed in its second invocation, once it
	// has logged a record (so some of that batch is already written).
	rt.KillDuringOnLog(2, `"type":"record"`)

	esm := &lambdart.ESM{Client: c, QueueURL: queue, VisibilityTimeout: 2, ReportBatchItemFailures: true}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	delivered := map[string]int{}
	var killedBatch []string
	crashes, reported := 0, 0
	for idle := time.Now(); time.Since(idle) < 5*time.Second; {
		res, err := esm.PollOnce(ctx, rt)
		if err != nil {
			t.Fatal(err)
		}
		if res.Received == 0 {
			continue
		}
		idle = time.Now()
		for _, r := range res.Event.Records {
			delivered[r.MessageId]++
		}
		switch {
		case errors.Is(res.Err, lambdart.ErrCrashed):
			crashes++
			for _, r := range res.Event.Records {
				killedBatch = append(killedBatch, r.MessageId)
			}
		case res.Err != nil:
			t.Fatalf("invocation failed: %v\n%s", res.Err, res.Invocation.Logs)
		default:
			for _, id := range res.FailedIDs {
				if id != victim {
					t.Errorf("batch item failure for %s, whose put was not refused", id)
				}
				reported++
				mu.Lock()
				refusing = false
				mu.Unlock()
			}
		}
	}
	if crashes != 1 || reported == 0 || refused == 0 {
		t.Fatalf("crashes %d, victim reported %d times, puts refused %d: the faults did not happen", crashes, reported, refused)
	}
	if !testsupport.QueueEmpty(t, c, queue) {
		t.Fatal("messages are left on the queue")
	}

	// Conservation: one object per message id, and nothing else.
	objects := map[string]int{}
	store := archive.NewS3(a.s3c, a.bucket)
	err := store.List(context.Background(), "demo/dead-letter-archive/sqs/", false, func(e archive.Entry) error {
		b, err := store.Get(context.Background(), e.Key)
		if err != nil {
			return err
		}
		// gjson: encoding/json would also take the inner "MessageId" key.
		objects[gjson.GetBytes(b, "messageId").String()]++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	lost, dup := 0, 0
	for _, id := range sent {
		switch objects[id] {
		case 0:
			lost++
		case 1:
		default:
			dup++
		}
	}
	if lost != 0 || dup != 0 || len(objects) != len(sent) {
		t.Errorf("%d messages lost, %d archived twice, %d objects for %d messages", lost, dup, len(objects), len(sent))
	}
	again := 0
	for id, n := range delivered {
		if n > 1 {
			again++
			if id != victim && !strings.Contains(strings.Join(killedBatch, ","), id) {
				t.Errorf("%s was delivered %d times, but was neither in the killed batch nor refused", id, n)
			}
		}
	}
	st := rt.Stats()
	t.Logf("%d messages, %d objects; delivered again: %d (killed batch of %d, refused message reported %d times); "+
		"%d invocations, %d cold starts, peak RSS %d MiB", len(sent), len(objects), again, len(killedBatch), reported,
		st.Invocations, st.ColdStarts, st.MaxRSSBytes>>20)
}

// TestArchiverBootstrapFailsItsColdStartWithV21sText starts the real
// bootstrap without stackName.
func TestArchiverBootstrapFailsItsColdStartWithV21sText(t *testing.T) {
	bin := lambdart.Build(t, "./cmd/write-db-dlq-records-to-s3")
	rt := lambdart.Start(t, lambdart.Function{Bootstrap: bin, Env: map[string]string{"system_bucket": "b"}})
	_, err := rt.Invoke(context.Background(), []byte(`{"Records":[]}`))
	if !errors.Is(err, lambdart.ErrInitFailed) || !strings.Contains(err.Error(), "Could not determine archive path as stackName env var is undefined.") {
		t.Fatalf("err = %v", err)
	}
}

// BenchmarkArchiverBatchOf10 measures the real bootstrap under the
// harness: cold start, time per batch of 10 seed-3 records (hoisted,
// failed executions unwrapped through the Step Functions fake, put to
// versitygw), peak memory.
func BenchmarkArchiverBatchOf10(b *testing.B) {
	rt := startArchiver(b, testsupport.LoadSFN(b, seed3+"/archive/_fixtures/sfn.json"), false).rt
	var recs []json.RawMessage
	raw, err := os.ReadFile(seed3 + "/writer-inputs.json")
	if err != nil {
		b.Fatal(err)
	}
	var ins []writerInput
	if err := json.Unmarshal(raw, &ins); err != nil {
		b.Fatal(err)
	}
	for _, in := range ins[20:30] { // a mix of layers and statuses
		recs = append(recs, in.Record)
	}
	payload, _ := json.Marshal(map[string]any{"Records": recs})
	lambdart.BenchBatches(b, rt, payload)
}
