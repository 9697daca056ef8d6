package dlacmd

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/dla/gen"
	"github.com/deadletter/deadletter/internal/recovery"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// A message whose notification is larger than SNS accepts (256 KiB: here a
// file checksum of 300 KiB, which the execution's payload and the granule's
// files carry). SNS refuses it (InvalidParameter, "Message too long"),
// whatever the retries; v21 fails the message then (the DLQ). The break:
// recover took the refusal for an AWS outage, left the object and stopped
// the run, so every re-run stopped at the same object and nothing after it
// (in key order) was ever recovered. What must hold: the object is not
// deleted (its notification was never published), nothing of it is
// published, the run goes on with the other objects, and the summary
// counts what the topics received.
func TestSNSOversizedNotificationDoesNotBlockTheRun(t *testing.T) {
	e := newRecoverEnv(t, gen.ReferenceSeed(), nil)
	topics := withTopics(t, e)
	bucket := generatedArchive(t, e, 20)
	layout := dla.Layout{Stack: "demo"}
	store := archive.NewS3(e.s3, bucket)
	ctx := context.Background()
	big := rewriteStrings(t, recoverableMessage(t), "0000000000000000ac9107e06c5fe319", strings.Repeat("c", 300<<10))
	// First in key order, so that a stop leaves every other object.
	key := layout.AreaPrefix(dla.AreaSQS) + "2024-03-01/000-oversized-notification"
	if err := store.Put(ctx, key, big); err != nil {
		t.Fatal(err)
	}
	arn := "arn:aws:states:us-east-1:123456789012:execution:demo-IngestAndPublishGranule:49373414-fb81-4e23-8da5-91186042e9bf"
	now := func() time.Time { return time.Date(2024, 3, 20, 12, 0, 0, 0, time.UTC) }
	args := []string{"recover", "--archive", "s3://" + bucket + "/demo", "--database-url", e.dbURL, "--yes", "--offline",
		"--concurrency", "1", "-o", "ndjson"}
	r := runAt(t, now, e.env, "", args...)
	if r.code != 3 {
		t.Fatalf("exit %d, want 3: %s", r.code, r.stderr)
	}
	var obj, sum map[string]any
	for _, o := range results(t, r.stdout) {
		switch {
		case o["type"] == "summary":
			sum = o
		case o["key"] == key:
			obj = o
		}
	}
	if obj == nil || sum == nil {
		t.Fatalf("no result for %s or no summary: %s", key, r.stdout)
	}
	// Not deleted: its bytes are in sqs/ or failed-sqs/.
	kept := false
	for _, k := range append(testsupport.ListKeys(t, e.s3, bucket, layout.AreaPrefix(dla.AreaSQS)),
		testsupport.ListKeys(t, e.s3, bucket, layout.AreaPrefix(dla.AreaFailed))...) {
		if strings.HasSuffix(k, "000-oversized-notification") {
			b, err := store.Get(ctx, k)
			kept = kept || err == nil && bytes.Equal(b, big)
		}
	}
	if !kept {
		t.Fatalf("the object whose notification was refused is gone (result %v, action %v)", obj["result"], obj["action"])
	}
	if obj["action"] == "deleted" || !strings.Contains(obj["error"].(string), "publishing the execution notification") {
		t.Fatalf("object: %v", obj)
	}
	// The run went on: every other object was reached.
	if sum["not_processed"] != float64(0) || sum["stopped_by"] != nil {
		t.Fatalf("the refused notification stopped the run: not processed %v, stopped by %v", sum["not_processed"], sum["stopped_by"])
	}
	// Nothing of it was published; the summary counts what was.
	sns := sum["sns"].(map[string]any)
	for _, topic := range recovery.Topics {
		keys := topics.Keys(t, topic)
		if sns[string(topic)] != float64(len(keys)) {
			t.Errorf("%s: received %d, summary %v", topic, len(keys), sns[string(topic)])
		}
		for _, k := range keys {
			if strings.HasPrefix(k, arn+"|") {
				t.Errorf("published %s", k)
			}
		}
		if topic == recovery.TopicExecution && len(keys) == 0 {
			t.Errorf("nothing published for the other objects")
		}
	}
}

// The same object in a dry run: the dry run publishes nothing, but it
// must say what the run will do. The break: its notifications were only
// counted, never checked, so the dry run said "written, would delete" for
// an object the run then fails and moves to failed-sqs.
func TestSNSDryRunSaysWhatAnOversizedNotificationDoes(t *testing.T) {
	e := newRecoverEnv(t, gen.ReferenceSeed(), nil)
	topics := withTopics(t, e)
	bucket := testsupport.NewBucket(t, e.s3)
	layout := dla.Layout{Stack: "demo"}
	big := rewriteStrings(t, recoverableMessage(t), "0000000000000000ac9107e06c5fe319", strings.Repeat("c", 300<<10))
	key := layout.AreaPrefix(dla.AreaSQS) + "2024-03-01/000-oversized-notification"
	if err := archive.NewS3(e.s3, bucket).Put(context.Background(), key, big); err != nil {
		t.Fatal(err)
	}
	now := func() time.Time { return time.Date(2024, 3, 20, 12, 0, 0, 0, time.UTC) }
	args := []string{"recover", "--archive", "s3://" + bucket + "/demo", "--database-url", e.dbURL, "--yes", "--offline", "-o", "ndjson"}
	outcome := func(stdout string) (string, string) {
		for _, o := range results(t, stdout) {
			if o["key"] == key {
				return o["result"].(string), o["action"].(string)
			}
		}
		t.Fatalf("no result for %s: %s", key, stdout)
		return "", ""
	}
	dry := runAt(t, now, e.env, "", append(args, "--dry-run")...)
	dryResult, dryAction := outcome(dry.stdout)
	real := runAt(t, now, e.env, "", args...)
	result, action := outcome(real.stdout)
	if result != "failed" || action != "moved" {
		t.Fatalf("run: %s %s", result, action)
	}
	if dryResult != result || dryAction != "would move" {
		t.Errorf("dry run said %s, %s; the run then: %s, %s", dryResult, dryAction, result, action)
	}
	if dry.code != real.code {
		t.Errorf("dry run exit %d, run exit %d", dry.code, real.code)
	}
	for _, topic := range recovery.Topics {
		if m := topics.Messages(t, topic); len(m) != 0 {
			t.Errorf("%s: %d published", topic, len(m))
		}
	}
}
