package main_test

import (
	"strings"
	"testing"
)

// (Cosmetic.) An SQS AccessDenied is explained with the archive's
// S3 wording: "check the profile, the role's policy and the bucket
// policy". pushdlq has no bucket; the policy that may refuse is the
// queue's (its access policy) or a KMS key's. Seen in the exit-4 message of
// a refused DeleteMessageBatch.
func TestSQSAccessDeniedDoesNotTalkOfABucket(t *testing.T) {
	t.Parallel()
	w := seededWorld(t, 8)
	_, denied := w.denyDeletes()
	_, stderr, code := w.run(denied, "", w.replayArgs("--yes", "-o", "json")...)
	if code != 4 {
		t.Fatalf("exit %d, want 4\n%s", code, stderr)
	}
	if strings.Contains(stderr, "bucket") {
		t.Errorf("the SQS access-denied message talks of a bucket policy:\n%s", stderr)
	}
}
