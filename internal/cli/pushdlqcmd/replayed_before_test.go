package pushdlqcmd

import (
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/testsupport"
)

// verb runs a pushdlq verb on the world's DLQ.
func (w *auditWorld) verb(args ...string) (code int, stdout, stderr string) {
	w.t.Helper()
	return w.cli(append(args, "--dlq", w.dlq, "--endpoint-url", w.endpoint)...)
}

// trace says how many times the audit shows a notification replayed,
// when, by whom and why; at the guard's limit its verdicts say a replay
// holds it back and no replay command is offered. triage's replay
// command says how many of its burst were replayed already and how many
// it holds back.
func TestTraceAndTriageShowTheReplaysRecordedAndWhatTheGuardHoldsBack(t *testing.T) {
	testsupport.SetAWSEnv(t, nil)
	w := newAuditWorld(t, 8)
	st := w.localStore()
	seedReplays(t, st, "", []string{"n-0", "n-1"}, []string{"n-0"}, []string{"n-0"})
	day := func(i int) string {
		return time.Now().UTC().Add(time.Duration(i-10) * 24 * time.Hour).Format("2006-01-02")
	}

	code, stdout, stderr := w.verb("trace", "--notification", "n-0", "--queue-base-url", w.base)
	want := "replayed 3 times: " + day(0) + " (role/ops-oncall/alice, INC-0), " + day(1) + " (role/ops-oncall/alice, no reason given), " +
		day(2) + " (role/ops-oncall/alice, INC-2); at the replay guard's limit (--max-replays 3): a replay holds it back"
	if code != 0 || !strings.Contains(stdout, want) || !strings.Contains(stdout, "would not be replayed: held back: replayed 3 times already") ||
		!strings.Contains(stdout, "no replay would send any of them") {
		t.Errorf("trace n-0: exit %d, want %q\n%s\n%s", code, want, stdout, stderr)
	}
	code, stdout, _ = w.verb("trace", "--notification", "n-1", "--queue-base-url", w.base, "-o", "json")
	if code != 0 || gjson.Get(stdout, "replays.#").Int() != 1 || gjson.Get(stdout, "replays.0.reason").String() != "INC-0" ||
		gjson.Get(stdout, "held_back").Bool() || gjson.Get(stdout, "replayed").Int() != 1 || !gjson.Get(stdout, "command").Exists() {
		t.Errorf("trace n-1 -o json: exit %d\n%s", code, stdout)
	}
	code, stdout, _ = w.verb("trace", "--notification", "n-2", "--queue-base-url", w.base)
	if code != 0 || !strings.Contains(stdout, "replayed 0 times before") {
		t.Errorf("trace n-2: exit %d\n%s", code, stdout)
	}

	code, stdout, stderr = w.verb("triage", "--queue-base-url", w.base, "-o", "json")
	var found bool
	for _, g := range gjson.Get(stdout, "groups").Array() {
		if g.Get("code").Int() == 1004 && g.Get("command").Exists() {
			found = true
			if g.Get("replayed_before").Int() != 2 || g.Get("held_back").Int() != 1 ||
				!strings.Contains(g.Get("verdict").String(), "2 messages replayed already, 1 of them at --max-replays 3: the replay holds them back") {
				t.Errorf("triage's 1004 burst: %s", g)
			}
		}
	}
	if code != 0 || !found {
		t.Errorf("triage: exit %d, no 1004 burst with a command\n%s\n%s", code, stdout, stderr)
	}
}
