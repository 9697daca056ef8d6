package main_test

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// A run stopped with exit 4 because the DLQ refused deletes (1
// message is now in its target and in the DLQ). The operator runs
// --resume before the permission is actually fixed (IAM changes take a
// while, or the wrong role is still in the environment). The resume does
// not try the delete it owes first: pass 1 sends a fresh canary, whose
// delete is refused too, and the run stops with "1 message is now in both
// the target queue and the DLQ", although two are (the earlier run's,
// whose delete the resume never attempted, and its own canary). Every
// such attempt puts one more message in both places and reports one. The
// resume should delete what the journal shows as sent before sending
// anything, or at least count those in what it says is in both places.
func TestResumeWhileDeletesAreStillDeniedSaysWhatIsInBothPlaces(t *testing.T) {
	t.Parallel()
	w := seededWorld(t, 80)
	proxy, env := w.denyDeletes()
	journal := filepath.Join(t.TempDir(), "journal.ndjson")
	stdout, stderr, code := w.run(env, "", w.replayArgs("--yes", "-o", "json", "--journal", journal)...)
	first := gjson.Get(stdout, "delete_failed").Int()
	if code != 4 || first < 1 {
		t.Fatalf("first run: exit %d, delete_failed %d\n%s", code, first, stderr)
	}
	sendsBefore := proxy.Calls()["SendMessageBatch"]
	stdout, stderr, code = w.run(env, "", w.replayArgs("--yes", "-o", "json", "--resume", journal)...)
	newSends := proxy.Calls()["SendMessageBatch"] - sendsBefore
	second := gjson.Get(stdout, "delete_failed").Int()
	t.Logf("resume: exit %d, %d new sends, delete_failed %d\n%s", code, newSends, second, stderr)
	if code != 4 {
		t.Errorf("resume with deletes still refused: exit %d, want 4", code)
	}
	inBoth := first + int64(gjson.Get(stdout, "sent").Int())
	want := "message"
	if inBoth > 1 {
		want = "messages"
	}
	if !strings.Contains(stderr, strings.Join([]string{strconv.FormatInt(inBoth, 10), want, map[bool]string{true: "is", false: "are"}[inBoth == 1], "now in both"}, " ")) {
		t.Errorf("%d messages are in both their target and the DLQ (%d from the first run, %d sent by the resume), but the resume says otherwise:\n%s",
			inBoth, first, inBoth-first, stderr)
	}
}
