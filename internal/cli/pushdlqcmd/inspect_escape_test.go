package pushdlqcmd

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/deadletter/deadletter/internal/cli/iostreams"
	"github.com/deadletter/deadletter/internal/sqsmove"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// TestInspectEscapesQueueTextOnATerminal: a message's action is printed in
// inspect's table; on a terminal its escape sequences are shown, not
// obeyed, and -o json keeps them exactly.
func TestInspectEscapesQueueTextOnATerminal(t *testing.T) {
	client := testsupport.SQSClient(t)
	queue := testsupport.NewQueue(t, client, "esc", false)
	action := "push\x1b]0;pwned\x07\x1b[2J"
	testsupport.SendBodies(t, client, queue, []string{`{"priority":1,"createdAt":1763109060000,"errorCode":1004,"action":"push\u001b]0;pwned\u0007\u001b[2J"}`}, nil)
	inspect := func(tty bool, extra ...string) string {
		ios, _, out, errOut := iostreams.Test()
		ios.SetTTY(false, tty, false)
		f := NewFactory(ios, func(string) string { return "" })
		f.SQS = func(context.Context) (sqsmove.API, string, error) { return client, "test", nil }
		if code := Run(context.Background(), f, append([]string{"inspect", "--dlq", queue, "--visibility-timeout", "1s"}, extra...)); code != 0 {
			t.Fatalf("inspect: exit %d: %s", code, errOut.String())
		}
		return out.String()
	}
	out := inspect(true)
	if strings.ContainsAny(out, "\x1b\x07") || !strings.Contains(out, `push\x1b]0;pwned\x07\x1b[2J`) {
		t.Errorf("terminal inspect:\n%q", out)
	}
	if out := inspect(false); !strings.Contains(out, action) {
		t.Errorf("piped inspect altered the text:\n%q", out)
	}
	var rep InspectReport
	if err := json.Unmarshal([]byte(inspect(true, "-o", "json")), &rep); err != nil || len(rep.ByAction) != 1 || rep.ByAction[0].Key != action {
		t.Errorf("inspect -o json: %v, %+v", err, rep.ByAction)
	}
}
