package main_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/testsupport"
)

// The DLQ refuses deletes (AccessDenied): the run stops after the first
// refusal, exits 4, says how many messages are in both places and that
// --resume deletes them; the resume, once deletes are allowed, deletes
// them without sending them again and replays the rest: every message
// ends up in exactly one place.
func TestDeleteDeniedStopsAndResumeDeletesWithoutResending(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 1, 2)
	w.seed(80)
	proxy := denyDeletes(t, w.endpoint)
	journal := filepath.Join(t.TempDir(), "journal.ndjson")
	stdout, stderr, code := w.run([]string{"AWS_ENDPOINT_URL=" + proxy.URL}, "", w.replayArgs("--yes", "-o", "json", "--journal", journal)...)
	if code != 4 {
		t.Errorf("exit %d, want 4 (permissions)", code)
	}
	sent := gjson.Get(stdout, "sent").Int()
	if sent != 1 || gjson.Get(stdout, "delete_failed").Int() != 1 || proxy.Calls()["SendMessageBatch"] != 1 {
		t.Errorf("want the run stopped after the first refused delete (the canary): %s", stdout)
	}
	if !strings.Contains(stderr, "1 message is now in both the target queue and the DLQ") || !strings.Contains(stderr, "--resume "+journal) {
		t.Errorf("stderr does not say what is in both places and how to resume:\n%s", stderr)
	}
	stdout, stderr, code = w.run(nil, "", w.replayArgs("--yes", "-o", "json", "--resume", journal)...)
	if code != 0 || gjson.Get(stdout, "skipped_duplicates").Int() != 1 {
		t.Errorf("resume: exit %d: %s\n%s", code, stdout, stderr)
	}
	w.exactlyOnce(w.places(1, 2), eligible, nil)
}

// denyDeletes is a proxy in front of endpoint whose DLQ refuses deletes
// (AccessDenied on DeleteMessageBatch); SetHook(nil) allows them again.
func denyDeletes(t *testing.T, endpoint string) *testsupport.Proxy {
	proxy := testsupport.NewProxy(t, endpoint)
	proxy.SetHook(func(op string, _ []byte) ([]byte, *testsupport.Reply) {
		if op == "DeleteMessageBatch" {
			return nil, &testsupport.Reply{Status: 400, Body: testsupport.AWSJSONError("AccessDenied", "not authorized to perform: sqs:deletemessage")}
		}
		return nil, nil
	})
	return proxy
}
