package main_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/sqsmove"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// readOneLineThenClose runs cmd as `| head -1` reads it
// (testsupport.HeadOne); while the run goes on, with message bodies in its
// spool, it checks that no spool file is in tmp: the file must already be
// unlinked, so that not even SIGKILL can leave it behind.
func readOneLineThenClose(t *testing.T, cmd *exec.Cmd, tmp string) (line, stderr string, state *os.ProcessState) {
	t.Helper()
	return testsupport.HeadOne(t, cmd, func() {
		if left, _ := os.ReadDir(tmp); len(left) != 0 {
			t.Errorf("%d files in TMPDIR while the run holds messages (%s): spools must be unlinked once open", len(left), left[0].Name())
		}
	})
}

// checkStoppedCleanly asserts a run that lost its stdout exited non-zero
// by itself (not by SIGPIPE: no 141), left nothing in TMPDIR and nothing
// invisible in the DLQ.
func (w *world) checkStoppedCleanly(state *os.ProcessState, stderr, tmp string) {
	t := w.t
	t.Helper()
	if !state.Exited() {
		t.Fatalf("the process was killed by a signal (%s), as SIGPIPE does; stderr: %s", state, stderr)
	}
	if code := state.ExitCode(); code == 0 || code == 141 {
		t.Errorf("exit %d, want non-zero and not 141", code)
	}
	if !strings.Contains(stderr, "stdout was closed") {
		t.Errorf("stderr does not say stdout was closed: %s", stderr)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("%d files left in TMPDIR: %s", len(left), left[0].Name())
	}
	q, err := sqsmove.Describe(context.Background(), w.c, w.dlq)
	if err != nil {
		t.Fatal(err)
	}
	if q.InFlight != 0 {
		t.Errorf("%d messages still invisible after the run ended: they were not released", q.InFlight)
	}
}

// `pushdlq replay -o ndjson | head -1`: the closed stdout stops the run,
// which releases what it holds, completes its journal, and exits 1.
func TestReplayWithClosedStdoutReleasesAndJournals(t *testing.T) {
	t.Parallel()
	w := seededWorld(t, 160)
	tmp := t.TempDir()
	journal := filepath.Join(t.TempDir(), "journal.ndjson")
	cmd := w.command(tmp, w.replayArgs("--yes", "-o", "ndjson", "--rate", "20", "--journal", journal)...)
	line, stderr, state := readOneLineThenClose(t, cmd, tmp)
	if gjson.Get(line, "type").Str != "message" {
		t.Errorf("first line %s", line)
	}
	w.checkStoppedCleanly(state, stderr, tmp)
	lines := testsupport.ReadLines(t, journal)
	last := lines[len(lines)-1]
	if gjson.Get(last, "event").Str != "summary" {
		t.Fatalf("the journal ends with %s, not its summary", last)
	}
	sent := gjson.Get(last, "info.sent").Int()
	if sent == 0 || sent >= 80 || gjson.Get(last, "info.released").Int() == 0 {
		t.Errorf("journal summary %s: want some but not all 80 sent, the rest released", last)
	}
	// Every message is in exactly one place: its target, or the DLQ.
	places := w.places(1, 2)
	for _, b := range w.bodies {
		got := places[b]
		if len(got) != 1 || (got[0] != "DLQ" && got[0] != eligible(b)) {
			t.Errorf("%s is in %v", b, got)
		}
	}
}

// `pushdlq export --out - | head -1`.
func TestExportWithClosedStdoutReleases(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	// More than a pipe's buffer (64 KiB), so that the export is still
	// writing when its reader goes away.
	pad := strings.Repeat("x", 1000)
	for i := range 200 {
		w.bodies = append(w.bodies, fmt.Sprintf(`{"priority":1,"createdAt":%d,"errorCode":1004,"pad":%q,"n":%d}`, inWindow, pad, i))
	}
	testsupport.SendBodies(t, w.c, w.dlq, w.bodies, nil)
	tmp := t.TempDir()
	line, stderr, state := readOneLineThenClose(t, w.command(tmp, "export", "--dlq", w.dlq, "--out", "-"), tmp)
	if gjson.Get(line, "message_id").Str == "" {
		t.Errorf("first line %s", line)
	}
	w.checkStoppedCleanly(state, stderr, tmp)
	q, _ := sqsmove.Describe(context.Background(), w.c, w.dlq)
	if q.Visible != 200 {
		t.Errorf("%d visible after the export, want all 200", q.Visible)
	}
}

// Killed while it held every message, and resumed at once: the resume
// knows from the journal what the killed run held and until when, waits
// for those messages, deletes the ones already sent and sends the rest.
// Nothing is left in two places.
func TestResumeRightAfterAKillWaitsForTheHeldMessages(t *testing.T) {
	t.Parallel()
	w := seededWorld(t, 160)
	journal := w.killReplayAt(bin, "DeleteMessageBatch", 4, "4s") // sent, not deleted

	// At once: everything is still invisible.
	stdout, stderr, code := w.run(nil, "", w.replayArgs("--yes", "--resume", journal, "-o", "json")...)
	if code != 0 {
		t.Fatalf("resume: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "waiting") || strings.Contains(stderr, "nothing to replay") {
		t.Errorf("the resume did not wait for the held messages: %s", stderr)
	}
	// Deleted before the kill: the two canaries and the first batch of 10.
	if gjson.Get(stdout, "skipped_duplicates").Int() == 0 || gjson.Get(stdout, "scanned").Int() != 160-12 {
		t.Errorf("resume summary %s", stdout)
	}
	w.exactlyOnce(w.places(1, 2), eligible, nil)
}

// A resume whose wait would be longer than --wait-held says until when
// and exits non-zero, touching nothing.
func TestResumeThatWouldWaitTooLongSaysUntilWhen(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 1, 2)
	until := time.Now().Add(time.Hour).UTC()
	journal := writeJournal(t, sqsmove.Event{Event: sqsmove.EvRun}, sqsmove.Event{Event: sqsmove.EvHeld, IDs: []string{"a", "b"}, Until: until.Format(time.RFC3339Nano)})
	_, stderr, code := w.run(nil, "", w.replayArgs("--yes", "--resume", journal, "--wait-held", "1m")...)
	if code != 1 || !strings.Contains(stderr, until.Format(time.RFC3339)) || !strings.Contains(stderr, "2 messages") {
		t.Errorf("exit %d, want 1 naming %s: %s", code, until.Format(time.RFC3339), stderr)
	}
}

// Another consumer holds every message: replay and inspect say so, and
// replay does not claim success.
func TestInFlightMessagesAreReported(t *testing.T) {
	t.Parallel()
	w := seededWorld(t, 8)
	testsupport.Receive(t, w.c, w.dlq, 8, 60) // another consumer
	stdout, stderr, code := w.run(nil, "", w.replayArgs("--yes", "-o", "json")...)
	if code != 3 || !strings.Contains(stderr, "8 messages are in flight: another consumer or an interrupted run holds them") || strings.Contains(stderr, "\nnothing to replay") {
		t.Errorf("replay: exit %d, want 3 saying 8 are in flight: %s", code, stderr)
	}
	if gjson.Get(stdout, "in_flight_elsewhere").Int() != 8 {
		t.Errorf("replay summary %s", stdout)
	}
	table, stderr, code := w.run(nil, "", "inspect", "--dlq", w.dlq)
	if code != 0 || !strings.Contains(table, "0 visible, 8 in flight: another consumer or an interrupted run holds them") || !strings.Contains(stderr, "8 in flight") {
		t.Errorf("inspect: exit %d:\n%s\n%s", code, table, stderr)
	}
}

// The reply to a batch is lost after SQS took it: the run journals those
// messages as uncertain (not failed), lists them in its summary and on
// stderr as possible duplicates, keeps them in the DLQ and exits 3. The
// resume sends them again and lists them again: every duplicate is one the
// summaries named.
func TestLostReplyIsListedAsPossibleDuplicates(t *testing.T) {
	t.Parallel()
	w := seededWorld(t, 48)
	drop := testsupport.NewDropReplyProxy(t, w.endpoint, func(op string, nth int, _ []byte) bool {
		return op == "SendMessageBatch" && nth == 3 // after the two canaries
	})
	journal := filepath.Join(t.TempDir(), "journal.ndjson")
	stdout, stderr, code := w.run(nil, "", append(w.replayArgs("--yes", "--journal", journal, "--concurrency", "1", "-o", "json"), "--endpoint-url", drop.URL)...)
	if code != 3 || drop.Dropped("SendMessageBatch") != 1 {
		t.Fatalf("exit %d (want 3), %d replies dropped: %s", code, drop.Dropped("SendMessageBatch"), stderr)
	}
	n := gjson.Get(stdout, "uncertain").Int()
	ids := gjson.Get(stdout, "possible_duplicate_ids").Array()
	if n == 0 || gjson.Get(stdout, "failed").Int() != 0 || gjson.Get(stdout, "possible_duplicates").Int() != n || int64(len(ids)) != n {
		t.Fatalf("summary %s", stdout)
	}
	if !strings.Contains(stderr, fmt.Sprintf("possible duplicates %d", n)) || !strings.Contains(stderr, ids[0].Str) {
		t.Errorf("stderr does not list the possible duplicates: %s", stderr)
	}
	listed := map[string]bool{}
	for _, id := range ids {
		listed[id.Str] = true
	}
	if got := journalUncertain(t, journal); len(got) != len(listed) {
		t.Errorf("journal has %d uncertain, summary %d", len(got), len(listed))
	}
	// The resume sends them again, and says so.
	stdout, stderr, code = w.run(nil, "", w.replayArgs("--yes", "--resume", journal, "-o", "json")...)
	if code != 0 {
		t.Fatalf("resume: exit %d: %s", code, stderr)
	}
	for _, id := range gjson.Get(stdout, "possible_duplicate_ids").Array() {
		if !listed[id.Str] {
			t.Errorf("resume lists %s, which was not uncertain", id.Str)
		}
		delete(listed, id.Str)
	}
	if len(listed) != 0 {
		t.Errorf("resume did not list %d of the uncertain messages it sent again", len(listed))
	}
	dupOK := map[string]bool{}
	for i, b := range w.bodies {
		dupOK[b] = gjson.Get(stdout, `possible_duplicate_ids.#(=="`+w.ids[i]+`")`).Exists()
	}
	w.exactlyOnce(w.places(1, 2), eligible, dupOK)
}
