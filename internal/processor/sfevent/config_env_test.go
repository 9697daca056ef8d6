package sfevent

import (
	"errors"
	"strings"
	"testing"
)

// TestLoadConfigRefusesADeadLetterQueueThatIsNotAURL: a queue name or ARN
// where v21 puts the queue's URL would fail every send, so that every
// failed write is retried until SQS's redrive; the cold start fails
// instead, naming the variable and its value.
func TestLoadConfigRefusesADeadLetterQueueThatIsNotAURL(t *testing.T) {
	env := configEnv(map[string]string{"DATABASE_URL": "postgres://x@h/db"})
	for _, q := range []string{"demo-sfEventSqsToDbRecordsDeadLetterQueue", "arn:aws:sqs:us-east-1:123456789012:demo-dlq",
		"https://sqs.us-east-1.amazonaws.com", "sqs.us-east-1.amazonaws.com/123456789012/demo-dlq", "https://sqs.us-east-1.amazonaws.com/"} {
		env[EnvDeadLetterQueue] = q
		_, err := LoadConfig(func(k string) string { return env[k] })
		var ee *EnvError
		if !errors.As(err, &ee) || !strings.Contains(err.Error(), `DeadLetterQueue="`+q+`"`) {
			t.Errorf("%s: error %v, want one naming DeadLetterQueue and the value", q, err)
		}
	}
	for _, q := range []string{"https://sqs.us-east-1.amazonaws.com/123456789012/demo-dlq", "http://127.0.0.1:4566/000000000000/q", ""} {
		env[EnvDeadLetterQueue] = q
		if _, err := LoadConfig(func(k string) string { return env[k] }); err != nil {
			t.Errorf("%s: %v", q, err)
		}
	}
}

// TestLoadConfigRequiresTheSystemBucket: without system_bucket, every
// message Cumulus held in S3 (`replace`) would be dead-lettered (with an
// error about a local archive) instead of written; the cold start fails
// instead, naming the variable.
func TestLoadConfigRequiresTheSystemBucket(t *testing.T) {
	env := configEnv(map[string]string{"DATABASE_URL": "postgres://x@h/db"}, "system_bucket")
	_, err := LoadConfig(func(k string) string { return env[k] })
	var ee *EnvError
	if !errors.As(err, &ee) || !strings.Contains(err.Error(), `system_bucket=""`) {
		t.Fatalf("error %v, want one naming system_bucket", err)
	}
	env["system_bucket"] = "demo-internal"
	if c, err := LoadConfig(func(k string) string { return env[k] }); err != nil || c.SystemBucket != "demo-internal" {
		t.Fatalf("%+v %v", c, err)
	}
}
