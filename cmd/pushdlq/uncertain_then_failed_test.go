package main_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/sqsmove"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// Run 1 was killed (SIGKILL) with X's batch in flight: the
// journal has "send [X]" and no outcome; X did reach P1 and is still in the
// DLQ. Resume 2 (of X's instant only) sends X again, and P1 answers X's entry with a server
// error each time (InternalError, not the sender's fault: retried, then
// failed). Resume 2 journals X as send_failed and, since it did not deliver
// it, does not list it. ReadJournal then drops X from Uncertain on that
// send_failed, although run 1's send of X is as uncertain as ever. Resume 3
// sends X as an ordinary message and does not list it either: X is in P1
// twice, and no summary of any run names it.
func TestUncertainThenFailedIsStillAPossibleDuplicate(t *testing.T) {
	t.Parallel()
	w := seededWorld(t, 16)
	x, body := w.ids[0], w.bodies[0]                                 // code 1004, priority 1, in the window
	testsupport.SendBodies(t, w.c, w.base+"P1", []string{body}, nil) // run 1's send arrived
	journal := writeJournal(t, append(killedHolding(w.dlq, w.ids), sqsmove.Event{Event: sqsmove.EvSend, Batch: 1, Target: w.base + "P1", IDs: []string{x}})...)

	proxy := testsupport.NewProxy(t, w.endpoint)
	proxy.SetHook(func(op string, req []byte) ([]byte, *testsupport.Reply) {
		if op != "SendMessageBatch" || !strings.Contains(string(req), gjson.Get(body, "notificationId").Str+`\"`) {
			return nil, nil
		}
		var ok, failed []string
		for _, e := range gjson.GetBytes(req, "Entries").Array() {
			if e.Get("MessageBody").Str == body {
				failed = append(failed, fmt.Sprintf(`{"Id":%q,"Code":"InternalError","Message":"injected","SenderFault":false}`, e.Get("Id").Str))
			} else {
				ok = append(ok, e.Get("Id").Str)
			}
		}
		if len(ok) > 0 { // let the others through: answer only for X
			return nil, nil
		}
		return nil, &testsupport.Reply{Status: 200, Body: `{"Successful":[],"Failed":[` + strings.Join(failed, ",") + `]}`}
	})
	// Both resumes replay X's instant only, so that X is the only message
	// for P1 (the canary, sent alone) and its send is the one that fails.
	args := []string{"replay", "--dlq", w.dlq, "--queue-base-url", w.base, "--window", fmt.Sprintf("%d/%d", inWindow, inWindow+1),
		"--codes", "1004,2003", "--yes", "--resume", journal, "-o", "json"}
	out2, err2, code2 := w.run([]string{"AWS_ENDPOINT_URL=" + proxy.URL}, "", args...)
	t.Logf("resume 2: exit %d, failed %d, possible duplicates %s\n%s", code2, gjson.Get(out2, "failed").Int(), gjson.Get(out2, "possible_duplicate_ids").Raw, err2)
	if gjson.Get(out2, "failed").Int() != 1 || gjson.Get(out2, "sent").Int() != 0 {
		t.Fatalf("X did not fail in resume 2: the scenario did not happen: %s", out2)
	}
	out3, err3, code3 := w.run(nil, "", args...)
	t.Logf("resume 3: exit %d, sent %d\n%s", code3, gjson.Get(out3, "sent").Int(), err3)
	listed := strings.Contains(gjson.Get(out2, "possible_duplicate_ids").Raw, x) || strings.Contains(gjson.Get(out3, "possible_duplicate_ids").Raw, x)
	n := 0
	for _, m := range testsupport.Drain(t, w.c, w.base+"P1", 2*time.Second) {
		if *m.Body == body {
			n++
		}
	}
	if n > 1 && !listed {
		t.Errorf("X (%s) is in P1 %d times, and neither resume lists it among possible_duplicate_ids", x, n)
	}
}
