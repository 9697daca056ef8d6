package main_test

import (
	"os"
	"testing"

	"github.com/tidwall/gjson"
)

// A journal written by the build before the journal's own
// encoder, group commit and pipelined deletes (main at 1d56769), its run
// killed with a send or a delete hung, is resumed by this build: the
// messages it journalled sent are skipped (deleted, not sent again), those
// in flight are listed as possible duplicates, everything else moves once.
// PUSHDLQ_OLD_BIN names that build, e.g.
//
//	git archive 1d56769 | tar -x -C /tmp/old && (cd /tmp/old && go build -o pushdlq-old ./cmd/pushdlq)
//	PUSHDLQ_OLD_BIN=/tmp/old/pushdlq-old go test -run OldBuildJournal ./cmd/pushdlq/
func TestOldBuildJournalIsResumedByThisBuild(t *testing.T) {
	old := os.Getenv("PUSHDLQ_OLD_BIN")
	if old == "" {
		t.Skip("PUSHDLQ_OLD_BIN is not set (a build of main at 1d56769)")
	}
	t.Parallel()
	for _, tc := range []struct {
		name, op string
		nth      int
	}{
		{"old run killed before its send was confirmed", "SendMessageBatch", 4},
		{"old run killed before its delete", "DeleteMessageBatch", 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := seededWorld(t, 160)
			journal, stdout, uncertain := w.killThenResume(old, tc.op, tc.nth)
			skipped := gjson.Get(stdout, "skipped_duplicates").Int()
			if tc.op == "SendMessageBatch" && (len(uncertain) == 0 || skipped != 0) {
				t.Errorf("%d in flight per the old journal (want one batch), %d skipped", len(uncertain), skipped)
			}
			if tc.op == "DeleteMessageBatch" && (len(uncertain) != 0 || skipped == 0) {
				t.Errorf("%d in flight per the old journal (want 0), %d skipped (want the batch)", len(uncertain), skipped)
			}
			w.exactlyOnce(w.places(1, 2), eligible, w.bodiesOf(uncertain))
			// The resumed journal (old lines, then this build's) reads whole.
			if _, err := os.ReadFile(journal); err != nil {
				t.Fatal(err)
			}
			journalUncertain(t, journal)
		})
	}
}
