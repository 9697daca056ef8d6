package dlawriter_test

import (
	"strings"
	"testing"

	"github.com/deadletter/deadletter/internal/processor/dlawriter"
)

// TestConfigFromEnvRefusesWhatIsNotABucketName: an S3 URL, an ARN or a
// path where the bucket's name belongs would fail every put, and every
// record would be retried until the DLQ's 14-day retention drops it; the
// cold start fails instead, naming the variable and the value.
func TestConfigFromEnvRefusesWhatIsNotABucketName(t *testing.T) {
	for _, b := range []string{"s3://demo-internal", "arn:aws:s3:::demo-internal", "demo-internal/demo", "demo internal"} {
		_, err := dlawriter.ConfigFromEnv(func(k string) string { return map[string]string{"system_bucket": b, "stackName": "demo"}[k] })
		if err == nil || !strings.Contains(err.Error(), `system_bucket="`+b+`"`) {
			t.Errorf("%s: %v, want an error naming system_bucket and the value", b, err)
		}
	}
	for _, b := range []string{"demo-internal", "my.bucket.v2", "Legacy_Bucket"} {
		if _, err := dlawriter.ConfigFromEnv(func(k string) string { return map[string]string{"system_bucket": b, "stackName": "demo"}[k] }); err != nil {
			t.Errorf("%s: %v", b, err)
		}
	}
}
