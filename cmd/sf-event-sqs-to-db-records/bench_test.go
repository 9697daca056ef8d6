package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/testsupport"
	"github.com/deadletter/deadletter/internal/testsupport/lambdart"
)

// BenchmarkRuntimeBatchOf10 is the real bootstrap under the Lambda runtime
// API harness, writing ten of the seed-3 archive's messages (executions,
// PDRs, granules and files; SNS notifications to fauxqs) into PostgreSQL:
// ns/op per warm invocation, plus the cold start (which connects the pool)
// and the process's peak memory.
func BenchmarkRuntimeBatchOf10(b *testing.B) {
	s3c := testsupport.S3Client(b)
	testsupport.UploadSeed3(b, s3c)
	sfn := testsupport.NewSFNFake(b, testsupport.LoadSFN(b, filepath.Join(testsupport.Seed3Dir(b), "archive", "_fixtures", "sfn.json")))
	dbURL := testsupport.NewCumulusDatabase(b, testsupport.Seed3Seed(b))
	topics := testsupport.NewNotificationTopics(b)
	c := testsupport.SQSClient(b)
	dlq := testsupport.NewQueue(b, c, "sfevent-bench-dlq-", false)
	rt := lambdart.Start(b, lambdart.Function{Bootstrap: lambdart.Build(b, "./cmd/sf-event-sqs-to-db-records"),
		Env: lambdart.Env(lambdart.ServiceEnv(b, "sqs", "sns", "s3"), map[string]string{
			"AWS_ENDPOINT_URL_SFN": sfn.URL, "DATABASE_URL": dbURL, "DeadLetterQueue": dlq, "system_bucket": "demo-internal",
			"execution_sns_topic_arn": topics.Topics.Execution, "granule_sns_topic_arn": topics.Topics.Granule,
			"pdr_sns_topic_arn": topics.Topics.Pdr})})

	// Ten archived messages with granules that write (the later keys).
	root := filepath.Join(testsupport.Seed3Dir(b), "archive")
	var keys []string
	_ = filepath.WalkDir(filepath.Join(root, "demo"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			keys = append(keys, p)
		}
		return err
	})
	sort.Strings(keys)
	var recs []json.RawMessage
	for _, k := range keys {
		raw, _ := os.ReadFile(k)
		body := gjson.GetBytes(raw, "body")
		if body.Type != gjson.String || !gjson.GetBytes(raw, "granules.0").Exists() || gjson.GetBytes(raw, "status").Str != "SUCCEEDED" {
			continue
		}
		rec, _ := json.Marshal(map[string]any{"messageId": fmt.Sprint("bench-", len(recs)), "body": body.Str,
			"eventSource": "aws:sqs", "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:in", "awsRegion": "us-east-1"})
		recs = append(recs, rec)
		if len(recs) == 10 {
			break
		}
	}
	if len(recs) < 10 {
		b.Fatalf("only %d messages with granules in the fixture", len(recs))
	}
	payload, _ := json.Marshal(map[string]any{"Records": recs})
	lambdart.BenchBatches(b, rt, payload)
}
