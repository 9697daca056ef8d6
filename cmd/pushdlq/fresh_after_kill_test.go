package main_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/testsupport"
)

// Issue 38 item 3: a replay killed (SIGKILL) prints nothing, and the same
// command run again started afresh, sending again what the killed run had
// sent but not deleted. It is refused now: the refusal names the killed
// run's journal (in the state directory) and prints the resume, which
// runs as printed (bash -c) and leaves every message exactly once; once
// resumed, a fresh replay is no longer refused.
func TestAFreshReplayAfterAKillIsRefusedAndPrintsTheResume(t *testing.T) {
	t.Parallel()
	w := seededWorld(t, 60)
	proxy := w.hangProxy()
	stuck := proxy.hangAt("DeleteMessageBatch", 2, false)
	killed := append(w.replayArgs("--yes", "--concurrency", "1", "--visibility-timeout", "3s"), "--endpoint-url", proxy.URL)
	testsupport.StartProc(t, w.commandOf(bin, t.TempDir(), killed...)).KillWhen(t, 60*time.Second, "the run never reached its second delete", stuck)

	_, stderr, code := w.run(nil, "", w.replayArgs("--yes", "--visibility-timeout", "3s")...)
	if code != 1 || !strings.Contains(stderr, "an earlier replay of this DLQ did not finish") {
		t.Fatalf("the fresh replay after the kill: exit %d (want 1, refused):\n%s", code, stderr)
	}
	_, after, ok := strings.Cut(stderr, "not sent again):\n  ")
	resume, _, _ := strings.Cut(after, "\n")
	if !ok || !strings.Contains(resume, "--resume "+filepath.Join(w.stateDir, "deadletter", "replay-")) {
		t.Fatalf("no resume command of the state directory's journal in:\n%s", stderr)
	}
	journal := resume[strings.LastIndex(resume, " ")+1:]
	uncertain := journalUncertain(t, journal)

	time.Sleep(4 * time.Second) // what the killed run held is visible again
	cmd := exec.Command("bash", "-c", strings.Replace(resume, "pushdlq ", bin+" ", 1))
	cmd.Env = w.env()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the printed resume, run as printed: %v\n%s", err, out)
	}
	w.exactlyOnce(w.places(1, 2), eligible, w.bodiesOf(uncertain))

	if _, stderr, code := w.run(nil, "", w.replayArgs("--yes", "--dry-run")...); code != 0 || strings.Contains(stderr, "did not finish") {
		t.Errorf("after the resume, a replay is still held back by the journal: exit %d:\n%s", code, stderr)
	}
}
