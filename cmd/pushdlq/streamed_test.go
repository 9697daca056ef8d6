package main_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/testsupport"
)

// With --yes the replay starts while the scan still runs. These runs are
// hit while the scan is provably not over (the proxy has handed out fewer
// messages than the DLQ holds, and slows every receive so that the scan
// outlasts the first batches): once killed in the middle of a batch whose
// send reached the target, and resumed; once with a batch refused by the
// target. Nothing is lost, nothing is in two places except the batch in
// flight at the kill (listed as possible duplicates), every message the
// killed run sent was journalled as held before its send record, and the
// refused batch stays in the DLQ.
func TestStreamedReplayHitWhileTheScanStillRuns(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		kill bool // kill the run at the fourth send; otherwise refuse it
	}{
		{"killed in flight, then resumed", true},
		{"a batch refused by the target", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := seededWorld(t, 320)
			proxy := w.hangProxy()
			var mu sync.Mutex
			received, sends, receivedAtHit := 0, 0, -1
			hit := make(chan struct{})
			// The fourth send: two canaries, then the second batch.
			fourth := func(op string) bool {
				if op != "SendMessageBatch" {
					return false
				}
				mu.Lock()
				defer mu.Unlock()
				sends++
				if sends == 4 {
					receivedAtHit = received
					return true
				}
				return false
			}
			proxy.SetHook(func(op string, _ []byte) ([]byte, *testsupport.Reply) {
				if op == "ReceiveMessage" {
					time.Sleep(100 * time.Millisecond) // the scan outlasts the first batches
				}
				if !tc.kill && fourth(op) {
					close(hit)
					return nil, &testsupport.Reply{Status: 400, Body: testsupport.AWSJSONError("AWS.SimpleQueueService.BatchRequestTooLong", "refused by the test proxy")}
				}
				return nil, nil
			})
			proxy.SetAfter(func(op string, _, resp []byte) []byte {
				if op == "ReceiveMessage" {
					mu.Lock()
					received += bytes.Count(resp, []byte(`"MessageId"`))
					mu.Unlock()
				}
				if tc.kill && fourth(op) { // the send reached the target
					close(hit)
					proxy.hang()
				}
				return resp
			})
			journal := filepath.Join(t.TempDir(), "journal.ndjson")
			args := append(w.replayArgs("--yes", "--journal", journal, "--concurrency", "1", "--visibility-timeout", "3s", "-o", "ndjson"), "--endpoint-url", proxy.URL)
			cmd := w.command(t.TempDir(), args...)
			var out, errOut bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errOut
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			select {
			case <-hit:
			case <-time.After(60 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("the run never reached its fourth send: %s", errOut.String())
			}
			mu.Lock()
			at := receivedAtHit
			mu.Unlock()
			if at >= len(w.bodies) {
				cmd.Process.Kill()
				t.Fatalf("the scan had received all %d messages before the fourth send: this run does not test a replay during the scan", at)
			}
			t.Logf("%d of %d messages received at the fourth send", at, len(w.bodies))

			dupOK := map[string]bool{}
			failed := map[string]bool{}
			if tc.kill {
				cmd.Process.Kill()
				cmd.Wait()
				heldBeforeSent(t, journal)
				_, uncertain := w.resumeAfterKill(journal)
				if len(uncertain) == 0 || len(uncertain) > 10 {
					t.Errorf("%d in flight per the journal, want the one batch", len(uncertain))
				}
				dupOK = w.bodiesOf(uncertain)
			} else {
				if err := cmd.Wait(); err == nil || cmd.ProcessState.ExitCode() != 3 {
					t.Fatalf("exit %v, want 3 (a batch failed): %s", err, errOut.String())
				}
				heldBeforeSent(t, journal)
				stdout := out.String()
				sc := bufio.NewScanner(strings.NewReader(stdout))
				for sc.Scan() {
					if gjson.Get(sc.Text(), "outcome").Str == "failed" {
						failed[gjson.Get(sc.Text(), "message_id").Str] = true
					}
				}
				if len(failed) != 10 || gjson.Get(stdout, `..#(type=="summary").failed`).Int() != 10 {
					t.Errorf("%d messages failed, want the refused batch of 10: %s", len(failed), stdout)
				}
			}
			byBody := map[string]string{}
			for i, b := range w.bodies {
				byBody[b] = w.ids[i]
			}
			w.exactlyOnce(w.places(1, 2), func(b string) string {
				if failed[byBody[b]] {
					return "" // refused: it stays in the DLQ
				}
				return eligible(b)
			}, dupOK)
		})
	}
}

// heldBeforeSent checks the journal's write-ahead order: every message of
// a send record was in a held record of its run before it, so that a
// resume knows to wait for it.
func heldBeforeSent(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	held := map[string]bool{}
	sends := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev struct {
			Event string
			IDs   []string
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			continue // a torn last line
		}
		switch ev.Event {
		case "run":
			clear(held)
		case "held":
			for _, id := range ev.IDs {
				held[id] = true
			}
		case "send":
			sends++
			for _, id := range ev.IDs {
				if !held[id] {
					t.Errorf("%s was in a send record before any held record of its run", id)
				}
			}
		}
	}
	if sends < 3 {
		t.Errorf("%d send records, want at least the canaries and one batch", sends)
	}
	if t.Failed() {
		b, _ := os.ReadFile(path)
		t.Logf("journal:\n%s", strings.Join(strings.SplitN(string(b), "\n", 30), "\n"))
	}
}
