package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/testsupport"
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
			w := newWorld(t, 1, 2)
			w.seed(160)
			proxy := testsupport.NewProxy(t, w.endpoint)
			release := make(chan struct{})
			t.Cleanup(func() { close(release) })
			var mu sync.Mutex
			calls := 0
			stuck := make(chan struct{})
			block := func(op string) {
				if op != tc.op {
					return
				}
				mu.Lock()
				calls++
				n := calls
				mu.Unlock()
				if n == tc.nth {
					close(stuck)
					<-release
				}
			}
			if tc.op == "SendMessageBatch" {
				proxy.SetAfter(func(op string, req, resp []byte) []byte { block(op); return resp })
			} else {
				proxy.SetHook(func(op string, body []byte) ([]byte, *testsupport.Reply) { block(op); return nil, nil })
			}
			journal := filepath.Join(t.TempDir(), "journal.ndjson")
			args := append(w.replayArgs("--yes", "--journal", journal, "--concurrency", "1", "--visibility-timeout", "3s", "-o", "json"), "--endpoint-url", proxy.URL)
			cmd := exec.Command(old, args...)
			cmd.Env = append(os.Environ(), "AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=testtesttest", "AWS_REGION=us-east-1", "AWS_EC2_METADATA_DISABLED=true")
			testsupport.StartProc(t, cmd).KillWhen(t, 60*time.Second, "the old run never reached its fourth call", stuck)
			time.Sleep(4 * time.Second) // the held messages come back

			uncertain := journalUncertain(t, journal)
			stdout, stderr, code := w.run(nil, "", w.replayArgs("--yes", "--resume", journal, "-o", "json")...)
			if code != 0 {
				t.Fatalf("resume by this build: exit %d: %s", code, stderr)
			}
			skipped := gjson.Get(stdout, "skipped_duplicates").Int()
			if tc.op == "SendMessageBatch" && (len(uncertain) == 0 || skipped != 0) {
				t.Errorf("%d in flight per the old journal (want one batch), %d skipped", len(uncertain), skipped)
			}
			if tc.op == "DeleteMessageBatch" && (len(uncertain) != 0 || skipped == 0) {
				t.Errorf("%d in flight per the old journal (want 0), %d skipped (want the batch)", len(uncertain), skipped)
			}
			for _, id := range gjson.Get(stdout, "possible_duplicate_ids").Array() {
				if !uncertain[id.Str] {
					t.Errorf("%s sent again, but the old journal did not have it in flight", id.Str)
				}
			}
			dupOK := map[string]bool{}
			for i, b := range w.bodies {
				dupOK[b] = uncertain[w.ids[i]]
			}
			w.exactlyOnce(w.places(1, 2), eligible, dupOK)
			// The resumed journal (old lines, then this build's) reads whole.
			if _, err := os.ReadFile(journal); err != nil {
				t.Fatal(err)
			}
			journalUncertain(t, journal)
		})
	}
}
