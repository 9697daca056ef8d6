package sfevent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/awsconfig"
	"github.com/deadletter/deadletter/internal/awsread"
	"github.com/deadletter/deadletter/internal/cli/dlacmd"
	"github.com/deadletter/deadletter/internal/cli/iostreams"
	"github.com/deadletter/deadletter/internal/recovery"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// seed3Records are the seed-3 archive's messages as the db writer's input
// queue delivers them: one SQS record per archive object, in key order,
// whose body is the message Cumulus archived (the DLA record's `body`; the
// object's text itself when it was stored raw or is corrupt).
func seed3Records(t *testing.T) (keys []string, records []json.RawMessage) {
	t.Helper()
	root := filepath.Join(testsupport.Seed3Dir(t), "archive")
	err := filepath.WalkDir(filepath.Join(root, "demo"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		keys = append(keys, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(keys)
	for i, k := range keys {
		raw, err := os.ReadFile(filepath.Join(root, k))
		if err != nil {
			t.Fatal(err)
		}
		body := string(raw)
		if b := gjson.GetBytes(raw, "body"); gjson.ValidBytes(raw) && b.Type == gjson.String {
			body = b.Str
		}
		rec, _ := json.Marshal(map[string]any{
			"messageId": fmt.Sprintf("seed3-%03d", i), "receiptHandle": "rh", "body": body,
			"attributes": map[string]string{"ApproximateReceiveCount": "1"}, "messageAttributes": map[string]any{},
			"eventSource": "aws:sqs", "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:demo-sfEventSqsToDbRecordsInputQueue", "awsRegion": "us-east-1",
		})
		records = append(records, rec)
	}
	return keys, records
}

// sqsRecorder stands in for the DeadLetterQueue in handler-level tests.
type sqsRecorder struct{ bodies []string }

func testHandler(t *testing.T, dbURL string, sfn *testsupport.SFNFake, dlq SQSAPI) *Handler {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return &Handler{
		Writer: recovery.Writer{
			DB:      testsupport.CumulusDB(t, pool),
			SFN:     awsread.StepFunctions{Client: sfn.Client()},
			Objects: awsread.Objects{Client: awsconfig.S3(testsupport.AWSConfig(), awsconfig.Settings{EndpointURL: testsupport.S3Endpoint(t)}), ReplaceBucket: "demo-internal"},
			Region:  "us-east-1",
			Now:     time.Now,
		},
		SQS: dlq, DeadLetterQueue: "https://sqs.us-east-1.amazonaws.com/123456789012/demo-dlq",
		Concurrency: 1,
	}
}

// TestWriterRowsMatchRecover feeds the seed-3 archive's 150 messages to the
// db writer and recovers the same archive with `dla recover` into another
// database: the two leave the same rows in every table, and each message
// the writer sent to its DeadLetterQueue is one recover failed.
func TestWriterRowsMatchRecover(t *testing.T) {
	s3c := testsupport.S3Client(t)
	testsupport.UploadSeed3(t, s3c)
	sfn := testsupport.NewSFNFake(t, testsupport.LoadSFN(t, filepath.Join(testsupport.Seed3Dir(t), "archive", "_fixtures", "sfn.json")))
	seed := testsupport.Seed3Seed(t)
	writerDB, recoverDB := testsupport.NewCumulusDatabase(t, seed), testsupport.NewCumulusDatabase(t, seed)
	runStart := time.Now().Add(-time.Second)

	keys, records := seed3Records(t)
	dlq := &sqsRecorder{}
	h := testHandler(t, writerDB, sfn, dlq)
	writerTopics, recoverTopics := testsupport.NewNotificationTopics(t), testsupport.NewNotificationTopics(t)
	h.Writer.Notifier = writerTopics.Publisher(t)
	var logs bytes.Buffer
	h.Log = &logs
	byID := map[string]string{}
	for i := 0; i < len(records); i += 10 {
		batch := records[i:min(i+10, len(records))]
		for j := range batch {
			byID[fmt.Sprintf("seed3-%03d", i+j)] = keys[i+j]
		}
		event, _ := json.Marshal(map[string]any{"Records": batch})
		resp, err := h.Handle(context.Background(), event)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.BatchItemFailures) > 0 {
			t.Errorf("batch %d: batch item failures %v (nothing here is transient)", i/10, resp.BatchItemFailures)
		}
	}

	testsupport.SetAWSEnv(t, map[string]string{
		"AWS_ENDPOINT_URL_S3": testsupport.S3Endpoint(t), "AWS_ENDPOINT_URL_SFN": sfn.URL, "AWS_ENDPOINT_URL_SNS": testsupport.SQSEndpoint(t),
	})
	ios, _, out, errOut := iostreams.Test()
	recoverEnv := map[string]string{"DEADLETTER_NO_PROMPT": "1", "execution_sns_topic_arn": recoverTopics.Topics.Execution,
		"granule_sns_topic_arn": recoverTopics.Topics.Granule, "pdr_sns_topic_arn": recoverTopics.Topics.Pdr}
	getenv := func(k string) string { return recoverEnv[k] }
	ios.SetEnv(getenv)
	code := dlacmd.Run(context.Background(), dlacmd.NewFactory(ios, getenv), []string{"recover", "--archive", "s3://demo-internal/demo",
		"--database-url", recoverDB, "--yes", "--concurrency", "1", "-o", "ndjson"})
	if code != 3 || strings.Contains(out.String(), `"stopped_by"`) {
		t.Fatalf("dla recover exit %d, want 3 (some objects fail) without a stop: %s", code, errOut)
	}

	// The same messages fail: recover's failures are the writer's dead letters.
	recoverFailed := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		o := gjson.Parse(line)
		if o.Get("type").Str == "object" && (o.Get("result").Str == "failed" || o.Get("result").Str == "unreadable") {
			recoverFailed[o.Get("key").Str] = o.Get("error").Str
		}
	}
	writerFailed := map[string]string{}
	for _, b := range dlq.bodies {
		writerFailed[byID[gjson.Get(b, "messageId").Str]] = gjson.Get(b, "error").Str
	}
	for k, e := range recoverFailed {
		if _, ok := writerFailed[k]; !ok {
			t.Errorf("%s: recover failed it (%.200s), the writer did not dead-letter it", k, e)
		}
	}
	for k, e := range writerFailed {
		if _, ok := recoverFailed[k]; !ok {
			t.Errorf("%s: dead-lettered (%.200s), recover wrote it", k, e)
		}
	}
	t.Logf("dead-lettered by the writer: %d; failed or unreadable in recover: %d", len(writerFailed), len(recoverFailed))

	// Every table, row for row.
	w, r := testsupport.DumpTables(t, writerDB, runStart), testsupport.DumpTables(t, recoverDB, runStart)
	total := 0
	for _, table := range []string{"executions", "pdrs", "granules", "files", "granules_executions"} {
		a, b := canonicalRows(w[table]), canonicalRows(r[table])
		total += len(a)
		if strings.Join(a, "\n") != strings.Join(b, "\n") {
			t.Errorf("%s: the writer left %d rows, recover %d, and they differ:\n%s", table, len(a), len(b), firstDiff(a, b))
		}
	}
	if total < 300 {
		t.Fatalf("only %d rows compared: the fixture did not load", total)
	}
	t.Logf("rows identical in the five tables: %d", total)

	// The same notifications on each topic (as multisets: the order of a
	// message's granules is the same, the interleaving across topics is not
	// compared).
	for _, topic := range recovery.Topics {
		a := testsupport.SortedKeys(writerTopics.Keys(t, topic))
		b := testsupport.SortedKeys(recoverTopics.Keys(t, topic))
		if strings.Join(a, "\n") != strings.Join(b, "\n") {
			t.Errorf("%s notifications: the writer published %d, recover %d, and they differ:\n%s", topic, len(a), len(b), firstDiff(a, b))
		}
		if len(a) == 0 {
			t.Errorf("no %s notification published", topic)
		}
		t.Logf("%s notifications identical: %d", topic, len(a))
	}
}

func canonicalRows(rows []map[string]any) []string {
	out := make([]string, 0, len(rows))
	for _, r := range rows {
		b, _ := json.Marshal(r) // map keys sorted
		out = append(out, string(b))
	}
	sort.Strings(out)
	return out
}

func firstDiff(a, b []string) string {
	set := func(xs []string) map[string]bool {
		m := map[string]bool{}
		for _, x := range xs {
			m[x] = true
		}
		return m
	}
	sa, sb := set(a), set(b)
	var out []string
	for _, x := range a {
		if !sb[x] {
			out = append(out, "  writer only: "+x)
		}
	}
	for _, x := range b {
		if !sa[x] {
			out = append(out, "  recover only: "+x)
		}
	}
	if len(out) > 6 {
		out = out[:6]
	}
	return strings.Join(out, "\n")
}

func (s *sqsRecorder) SendMessage(_ context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	s.bodies = append(s.bodies, aws.ToString(in.MessageBody))
	return &sqs.SendMessageOutput{MessageId: aws.String(fmt.Sprint(len(s.bodies)))}, nil
}
