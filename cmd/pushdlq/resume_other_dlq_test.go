package main_test

import (
	"testing"

	"github.com/tidwall/gjson"
)

// `--resume JOURNAL` never checks that the journal is one of this
// DLQ's: its run events name their source queue, and nothing compares it
// with --dlq. A run on DLQ A was killed holding its messages; the operator
// resumes with that journal but the wrong --dlq (B, the staging DLQ, or a
// shell history line for another region). The resume counts every message
// A's run held as still_held in B (they can never come back there), exits 3
// ("run again once they are visible") on every later run, may wait up to
// --wait-held for messages of another queue, and appends B's run to A's
// journal. A journal whose runs replayed another queue should be refused
// (exit 2) before the DLQ is read.
func TestResumeWithAnotherDLQsJournalIsRefused(t *testing.T) {
	t.Parallel()
	a := seededWorld(t, 16)
	b := seededWorld(t, 16)
	journal := writeJournal(t, killedHolding(a.dlq, a.ids)...) // A's run, killed after it journalled what it holds

	stdout, stderr, code := b.run(nil, "", b.replayArgs("--yes", "--resume", journal, "-o", "json")...)
	held := gjson.Get(stdout, "still_held").Int()
	t.Logf("exit %d, still_held %d\n%s", code, held, stderr)
	if code == 2 {
		return // refused: the journal is another DLQ's
	}
	if held != 0 || code != 0 {
		t.Errorf("resume of DLQ %s with a journal of DLQ %s: exit %d, still_held %d (messages of another queue); want it refused with exit 2",
			b.dlq, a.dlq, code, held)
	}
}
