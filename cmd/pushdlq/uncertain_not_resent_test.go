package main_test

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/sqsmove"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// A run was killed with SIGKILL while a batch was in flight: the
// journal has its "send" and no outcome, and no summary (the run never
// wrote one), so nothing lists these messages yet. The message did reach
// its target (P1) and is still in the DLQ. The operator resumes with
// --resume JOURNAL but a narrower --codes (or window, or --max): the
// message is no longer eligible, the resume releases it untouched, and its
// summary does not list it in possible_duplicate_ids although the plan
// promised ("uncertain in the resumed run: 1 ... listed in the summary").
// The resume ends; the message is in P1 and in the DLQ, and the next
// replay (or the push-dlq processor) delivers it twice. No summary of any
// run lists it: an unlisted duplicate.
func TestUncertainSendNotResentIsStillListed(t *testing.T) {
	t.Parallel()
	w := seededWorld(t, 16)
	x := w.ids[0] // code 1004, priority 1, in the window
	// The killed run's send reached P1.
	testsupport.SendBodies(t, w.c, w.base+"P1", []string{w.bodies[0]}, nil)
	journal := writeJournal(t, append(killedHolding(w.dlq, w.ids), sqsmove.Event{Event: sqsmove.EvSend, Batch: 1, Target: w.base + "P1", IDs: []string{x}})...)

	stdout, stderr, code := w.run(nil, "", "replay", "--dlq", w.dlq, "--queue-base-url", w.base, "--window", winStart+"/"+winEnd,
		"--codes", "2003", "--yes", "--resume", journal, "-o", "json")
	t.Logf("exit %d\n%s\n%s", code, stdout, stderr)
	listed := false
	for _, id := range gjson.Get(stdout, "possible_duplicate_ids").Array() {
		if id.String() == x {
			listed = true
		}
	}
	if !listed && !strings.Contains(stderr, x) {
		t.Errorf("message %s may be in P1 already (the killed run's send had no reply) and is still in the DLQ, but the resume that released it lists it nowhere (exit %d)", x, code)
	}
}
