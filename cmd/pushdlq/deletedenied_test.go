package main_test

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/testsupport"
)

// The operator's role may send to the priority queues but not delete from
// the DLQ (sqs:DeleteMessage missing: a common IAM slip). The canary proves
// the target, not the delete, so the run must stop sending at the first
// delete refused for a reason no retry fixes (AccessDenied), exit 4, say how
// many messages are now in both places and that --resume (with its journal)
// deletes them, so that nobody re-runs a fresh replay and sends them twice.
// The resume, once deletes are allowed, deletes them without sending them
// again and replays the rest: every message ends up in exactly one place.
func TestDeleteDeniedStopsAndResumeDeletesWithoutResending(t *testing.T) {
	t.Parallel()
	w := seededWorld(t, 80)
	proxy, denied := w.denyDeletes()
	stdout, stderr, code := w.run(denied, "", w.replayArgs("--yes", "-o", "json")...)
	if code != 4 {
		t.Errorf("exit %d, want 4 (permissions)", code)
	}
	sent := gjson.Get(stdout, "sent").Int()
	if sent != 1 || gjson.Get(stdout, "delete_failed").Int() != 1 || proxy.Calls()["SendMessageBatch"] != 1 {
		t.Errorf("want the run stopped after the first refused delete (the canary): %s", stdout)
	}
	journal := gjson.Get(stdout, "journal").Str // the default one, under XDG_STATE_HOME
	if journal == "" || !strings.Contains(stderr, "1 message is now in both the target queue and the DLQ") || !strings.Contains(stderr, "--resume "+journal) {
		t.Errorf("stderr does not say what is in both places and how to resume (journal %q):\n%s", journal, stderr)
	}
	stdout, stderr, code = w.run(nil, "", w.replayArgs("--yes", "-o", "json", "--resume", journal)...)
	if code != 0 || gjson.Get(stdout, "skipped_duplicates").Int() != 1 {
		t.Errorf("resume: exit %d: %s\n%s", code, stdout, stderr)
	}
	w.exactlyOnce(w.places(1, 2), eligible, nil)
}

// denyDeletes puts a proxy in front of the world's SQS whose DLQ refuses
// deletes (AccessDenied on DeleteMessageBatch, as IAM words it), and
// returns it (SetHook(nil) allows them again) and the environment that
// sends a run through it.
func (w *world) denyDeletes() (*testsupport.Proxy, []string) {
	proxy := testsupport.NewProxy(w.t, w.endpoint)
	proxy.SetHook(func(op string, _ []byte) ([]byte, *testsupport.Reply) {
		if op == "DeleteMessageBatch" {
			return nil, &testsupport.Reply{Status: 400, Body: testsupport.AWSJSONError("AccessDenied",
				"User: arn:aws:sts::000000000000:assumed-role/oncall is not authorized to perform: sqs:deletemessage")}
		}
		return nil, nil
	})
	return proxy, []string{"AWS_ENDPOINT_URL=" + proxy.URL}
}
