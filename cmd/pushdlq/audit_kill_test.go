package main_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/testsupport"
)

// auditChunk is the kill rounds' chunk of items (DEADLETTER_AUDIT_CHUNK_LINES):
// small, so that chunks land during a run of a few seconds.
const auditChunk = 5

// A replay killed (SIGKILL) at a random moment, in rounds, leaves a record
// that pushdlq history shows as not finished (finished false, ended_at
// null) with the items it reached. Census by body: every message an item
// lists as replayed is in the target queue the item names, and of the
// messages in the target queues at most the last chunks' worth (the chunk
// being gathered, the one being written, and the batch whose reply the
// kill cut) is missing from the items.
func TestAKilledReplayLeavesARecordHistoryShowsAsUnfinishedWithEveryMoveRecorded(t *testing.T) {
	t.Parallel()
	for round, rate := range []int{40, 100, 100, 400} {
		t.Run(fmt.Sprint("round ", round), func(t *testing.T) {
			w := seededWorld(t, 240) // 120 eligible
			env := append(w.env(), fmt.Sprintf("DEADLETTER_AUDIT_CHUNK_LINES=%d", auditChunk), "TMPDIR="+t.TempDir())
			cmd := w.commandOf(bin, t.TempDir(), w.replayArgs("--yes", "--rate", fmt.Sprint(rate), "--concurrency", "2", "--reason", "kill round")...)
			cmd.Env = env
			p := testsupport.StartProc(t, cmd)
			// From before the first move (the scan) to about the end of
			// the 120 sends at the rate.
			after := time.Duration(200+rand.IntN(300+120_000/rate)) * time.Millisecond
			p.KillAfter(after)
			t.Logf("rate %d/s, killed after %s", rate, after)

			byBody, bodyOf := w.targetCensus(), w.bodyOfID()

			out, err := w.commandOf(bin, t.TempDir(), "history", "-o", "ndjson").Output()
			if err != nil {
				t.Fatalf("history: %v", err)
			}
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			if strings.TrimSpace(string(out)) == "" {
				// Killed before the record was begun: nothing may have moved.
				if len(byBody) != 0 {
					t.Fatalf("no record, but %d messages are in the target queues", len(byBody))
				}
				t.Logf("killed before the first move: no record, nothing moved")
				return
			}
			if len(lines) != 1 {
				t.Fatalf("%d runs in history, want 1:\n%s", len(lines), out)
			}
			l := lines[0]
			// A kill after the finished record (the run was ending, or over)
			// is not a run killed part way: its record must be whole.
			finished := gjson.Get(l, "finished").Bool()
			switch {
			case gjson.Get(l, "reason").String() != "kill round":
				t.Errorf("history of the killed run: %s", l)
			case finished && (gjson.Get(l, "ended_at").Type == gjson.Null || gjson.Get(l, "exit_code").Int() != 0):
				t.Errorf("history of a run that finished before its kill: %s", l)
			case !finished && (gjson.Get(l, "ended_at").Type != gjson.Null || gjson.Get(l, "exit_code").Type != gjson.Null):
				t.Errorf("history of the killed run: %s", l)
			}
			// The items, all of them: from the record's folder, which
			// history names.
			items := readItems(t, gjson.Get(l, "record").String())
			recorded := map[string]bool{}
			for _, it := range items {
				if gjson.Get(it, "action").String() != "replayed" {
					continue
				}
				b := bodyOf[gjson.Get(it, "message_id").String()]
				recorded[b] = true
				if q := gjson.Get(it, "queue").String(); byBody[b] != q {
					t.Errorf("item %s is recorded replayed to %s, but its body is in %q", it, q, byBody[b])
				}
			}
			missing := 0
			for b := range byBody {
				if !recorded[b] {
					missing++
				}
			}
			bound := 2*auditChunk + 2*10 // two chunks, two batches in flight (--concurrency 2)
			if finished {
				bound = 0
			}
			t.Logf("finished %v: %d moved, %d recorded replayed, %d moved and not recorded (bound %d)", finished, len(byBody), len(recorded), missing, bound)
			if missing > bound {
				t.Errorf("%d moved messages are missing from the items, more than the last chunks' %d", missing, bound)
			}
		})
	}
}

// readItems is every item line of the chunks in a local record folder.
func readItems(t *testing.T, folder string) []string {
	t.Helper()
	chunks, err := filepath.Glob(filepath.Join(folder, "items-*.ndjson"))
	if err != nil || folder == "" {
		t.Fatalf("the record's chunks in %q: %v", folder, err)
	}
	var items []string
	for _, c := range chunks {
		for _, l := range testsupport.ReadLines(t, c) {
			if strings.TrimSpace(l) != "" {
				items = append(items, l)
			}
		}
	}
	return items
}

// A replay stopped by SIGINT (Ctrl-C) part way finishes its record as
// interrupted, exit 130: history shows it finished with that exit code,
// and every message in the target queues is among its items, each where
// its item says.
func TestAnInterruptedReplayFinishesItsRecordAsInterrupted(t *testing.T) {
	t.Parallel()
	w := seededWorld(t, 240)
	cmd := w.commandOf(bin, t.TempDir(), w.replayArgs("--yes", "--rate", "40", "--concurrency", "2")...)
	cmd.Env = append(cmd.Env, fmt.Sprintf("DEADLETTER_AUDIT_CHUNK_LINES=%d", auditChunk))
	p := testsupport.StartProc(t, cmd)
	time.Sleep(1500 * time.Millisecond)
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
		t.Fatalf("after SIGINT: %v, want exit 130\n%s", err, p.Stderr.String())
	}
	byBody := w.targetCensus()
	out, err := w.commandOf(bin, t.TempDir(), "history", "-o", "ndjson").Output()
	if err != nil {
		t.Fatalf("history: %v", err)
	}
	l := strings.TrimSpace(string(out))
	if strings.Count(l, "\n") != 0 || !gjson.Get(l, "finished").Bool() || gjson.Get(l, "exit_code").Int() != 130 || gjson.Get(l, "ended_at").Type == gjson.Null {
		t.Fatalf("history of the interrupted run:\n%s", out)
	}
	folder := gjson.Get(l, "record").String()
	fin := strings.Join(testsupport.ReadLines(t, filepath.Join(folder, "finished.json")), "")
	if !gjson.Get(fin, "interrupted").Bool() {
		t.Errorf("finished record not marked interrupted: %s", fin)
	}
	bodyOf := w.bodyOfID()
	recorded := 0
	for _, it := range readItems(t, folder) {
		if gjson.Get(it, "action").String() != "replayed" {
			continue
		}
		recorded++
		if b := bodyOf[gjson.Get(it, "message_id").String()]; byBody[b] != gjson.Get(it, "queue").String() {
			t.Errorf("item %s: its body is in %q", it, byBody[b])
		}
	}
	if recorded != len(byBody) || recorded == 0 || recorded == 120 {
		t.Errorf("%d recorded replayed, %d in the targets: want the same, part of the 120", recorded, len(byBody))
	}
	if gjson.Get(l, "counts.replayed").Int() != int64(recorded) {
		t.Errorf("counts %s, %d items replayed", gjson.Get(l, "counts"), recorded)
	}
}

// targetCensus drains the priority queues P1 and P2: for each body, the
// queue it is in (a body in two places fails the test).
func (w *world) targetCensus() map[string]string {
	w.t.Helper()
	byBody := map[string]string{}
	for _, prio := range []int{1, 2} {
		q := fmt.Sprintf("%sP%d", w.base, prio)
		for _, m := range testsupport.Drain(w.t, w.c, q, 2*time.Second) {
			b := aws.ToString(m.Body)
			if _, twice := byBody[b]; twice {
				w.t.Errorf("%s is in a target twice", b)
			}
			byBody[b] = q
		}
	}
	return byBody
}

// bodyOfID is the seeded body of each DLQ message id.
func (w *world) bodyOfID() map[string]string {
	bodyOf := map[string]string{}
	for i, id := range w.ids {
		bodyOf[id] = w.bodies[i]
	}
	return bodyOf
}
