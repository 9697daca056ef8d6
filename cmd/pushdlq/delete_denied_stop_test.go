package main_test

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/testsupport"
)

// The operator's role may send to the priority queues but not
// delete from the DLQ (sqs:DeleteMessage missing: a common IAM slip). The
// canary proves the target, not the delete: the run goes on sending every
// eligible message, and every one of them is now in its target and still
// in the DLQ. The run should stop sending once a delete is refused for
// a reason that no retry can fix (access denied), as it stops a target
// whose canary is refused; and the summary should say which messages are
// in both places (delete_failed is a bare count) and that a --resume
// deletes them, so that nobody re-runs a fresh replay and sends them twice.
func TestDeleteDeniedStopsTheRun(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 1, 2)
	w.seed(80)
	proxy := testsupport.NewProxy(t, w.endpoint)
	proxy.SetHook(func(op string, _ []byte) ([]byte, *testsupport.Reply) {
		if op == "DeleteMessageBatch" {
			return nil, &testsupport.Reply{Status: 400, Body: testsupport.AWSJSONError("AccessDenied", "User: arn:aws:sts::000000000000:assumed-role/oncall is not authorized to perform: sqs:deletemessage")}
		}
		return nil, nil
	})
	stdout, stderr, code := w.run([]string{"AWS_ENDPOINT_URL=" + proxy.URL}, "", w.replayArgs("--yes", "-o", "json")...)
	sent := gjson.Get(stdout, "sent").Int()
	delFailed := gjson.Get(stdout, "delete_failed").Int()
	t.Logf("exit %d, sent %d, delete_failed %d, DeleteMessageBatch calls %d\n%s", code, sent, delFailed, proxy.Calls()["DeleteMessageBatch"], stderr)
	if code == 0 {
		t.Errorf("exit 0")
	}
	// One batch per target may be in flight when the first refusal comes back.
	if delFailed > 20 {
		t.Errorf("%d messages sent and left in the DLQ after the DLQ refused the first delete with AccessDenied: the run should have stopped sending", delFailed)
	}
	if !strings.Contains(stderr, "--resume") {
		t.Errorf("stderr does not tell the operator to --resume to delete the messages that are in both places")
	}
}
