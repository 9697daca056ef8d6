package main_test

import (
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/testsupport"
)

// roundsProxy is the world's SQS behind a proxy that enforces an in-flight
// limit of 25, with a hang proxy in front that hangs the nth call of op
// made in the second round of reading on (after round 1's deletes), after
// it reached SQS (reached) or before; stuck is closed when it does.
func (w *world) roundsProxy(op string, nth int, reached bool) (url string, stuck <-chan struct{}) {
	lim := testsupport.NewInFlightLimitProxy(w.t, w.endpoint, 25)
	p := &hangProxy{Proxy: testsupport.NewProxy(w.t, lim.URL), release: make(chan struct{})}
	w.t.Cleanup(func() { close(p.release) })
	var mu sync.Mutex
	deleted, round2, calls := false, false, 0
	ch := make(chan struct{})
	block := func(o string) {
		mu.Lock()
		hang := false
		switch {
		case o == "DeleteMessageBatch" && !round2:
			deleted = true
		case o == "ReceiveMessage" && deleted:
			round2 = true
		}
		if round2 && o == op {
			calls++
			hang = calls == nth
		}
		mu.Unlock()
		if hang {
			close(ch)
			p.hang()
		}
	}
	if reached {
		p.SetAfter(func(o string, _, resp []byte) []byte { block(o); return resp })
	} else {
		p.SetHook(func(o string, _ []byte) ([]byte, *testsupport.Reply) { block(o); return nil, nil })
	}
	return p.URL, ch
}

// A park replay reading on past the in-flight limit, killed (SIGKILL) in
// its second round with a send that reached SQS unanswered, or a delete
// unanswered, and resumed from its journal: nothing is lost and nothing
// is sent or parked twice but the sends the journal has in flight. Each
// eligible message is in its target once (twice only when the journal has
// it uncertain), each other one parked (delayed) or in the DLQ once, and
// the resume's summary adds up.
func TestParkReplayKilledInALaterRoundResumesWithoutLossOrResend(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, op string
		reached  bool
	}{
		{"a send reached SQS unanswered", "SendMessageBatch", true},
		{"a delete unanswered", "DeleteMessageBatch", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := seededWorld(t, 90)
			url, stuck := w.roundsProxy(tc.op, 2, tc.reached)
			journal := filepath.Join(t.TempDir(), "journal.ndjson")
			args := append(w.replayArgs("--yes", "--ineligible", "park", "--journal", journal, "--concurrency", "1", "--visibility-timeout", "3s", "-o", "json"), "--endpoint-url", url)
			proc := testsupport.StartProc(t, w.command(t.TempDir(), args...))
			proc.KillWhen(t, 60*time.Second, "the run never reached its second round's "+tc.op, stuck)
			if !strings.Contains(proc.Stderr.String(), "round 2: ") {
				t.Fatalf("killed before reading on:\n%s", proc.Stderr.String())
			}
			time.Sleep(4 * time.Second) // what it held is visible again
			uncertain := w.bodiesOf(journalUncertain(t, journal))
			// A new limit proxy: the killed run's messages are no longer in flight.
			lim := testsupport.NewInFlightLimitProxy(t, w.endpoint, 25)
			stdout, stderr, code := w.run(nil, "", append(w.replayArgs("--yes", "--ineligible", "park", "--resume", journal, "--visibility-timeout", "5s", "-o", "json"), "--endpoint-url", lim.URL)...)
			s := gjson.Parse(stdout)
			// Exit 3: the killed run's parked copies are delayed in the DLQ.
			if code != 3 || s.Get("delayed").Int() == 0 || strings.Contains(stderr, "read the first") {
				t.Fatalf("resume: exit %d, want 3 for the delayed copies only:\n%s\n%s", code, stdout, stderr)
			}
			if s.Get("sent").Int()+s.Get("failed").Int()+s.Get("uncertain").Int()+s.Get("hold_lost").Int()+s.Get("abandoned").Int() != s.Get("eligible").Int() ||
				s.Get("parked").Int()+s.Get("not_parked").Int() != s.Get("ineligible").Int() {
				t.Errorf("the resume's summary does not add up: %s", stdout)
			}
			doubt := 0
			for _, u := range uncertain {
				if u {
					doubt++
				}
			}
			if skipped := s.Get("skipped_duplicates").Int(); (tc.reached && (doubt == 0 || skipped != 0)) || (!tc.reached && (doubt != 0 || skipped == 0)) {
				t.Errorf("%d in flight per the journal, %d skipped: want the hung send in flight, or the hung delete's batch skipped", doubt, skipped)
			}
			places := w.places(1, 2)
			for _, b := range testsupport.DelayedBodies(t, w.dlq) {
				places[b] = append(places[b], "delayed")
			}
			for _, b := range w.bodies {
				at, want := places[b], eligible(b)
				slices.Sort(at)
				switch {
				case want != "" && len(at) == 1 && at[0] == want:
				case want != "" && uncertain[b] && len(at) == 2 && slices.Contains(at, want):
				case want == "" && len(at) == 1 && (at[0] == "delayed" || at[0] == "DLQ"):
				case want == "" && uncertain[b] && strings.Join(at, " ") == "DLQ delayed":
				default:
					t.Errorf("%s (want %q, in flight when killed %v) is in %v", b, want, uncertain[b], at)
				}
			}
		})
	}
}

// An export --delete reading on past the in-flight limit, killed (SIGKILL)
// in its second round (a delete that reached SQS unanswered, or the
// second round's scan): every message is in FILE.partial or the DLQ, each
// deleted one in the file; a second export to FILE is refused and leaves
// the partial file alone.
func TestExportDeleteKilledInALaterRoundLosesNothing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, op string
		reached  bool
	}{
		{"a delete reached SQS unanswered", "DeleteMessageBatch", true},
		{"scanning", "ReceiveMessage", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := seededWorld(t, 90)
			url, stuck := w.roundsProxy(tc.op, 2, tc.reached)
			file := filepath.Join(t.TempDir(), "drained.ndjson")
			args := []string{"export", "--dlq", w.dlq, "--out", file, "--delete", "--yes", "--visibility-timeout", "3s", "--endpoint-url", url}
			proc := testsupport.StartProc(t, w.command(t.TempDir(), args...))
			proc.KillWhen(t, 60*time.Second, "the export never reached its second round's "+tc.op, stuck)
			if !strings.Contains(proc.Stderr.String(), "round 2: ") {
				t.Fatalf("killed before reading on:\n%s", proc.Stderr.String())
			}
			partial := testsupport.ReadLines(t, file+".partial")
			_, stderr, code := w.run(nil, "", "export", "--dlq", w.dlq, "--out", file, "--delete", "--yes")
			if code != 2 || !strings.Contains(stderr, "only copy") || len(testsupport.ReadLines(t, file+".partial")) != len(partial) {
				t.Errorf("a second export: exit %d, want 2 leaving the partial file alone:\n%s", code, stderr)
			}
			time.Sleep(4 * time.Second) // what it held is visible again
			places := w.places()
			inFile := 0
			for _, l := range partial {
				b := gjson.Get(l, "body").Str
				places[b] = append(places[b], "file")
			}
			for _, b := range w.bodies {
				at := places[b]
				slices.Sort(at)
				switch strings.Join(at, " ") {
				case "file":
					inFile++
				case "DLQ", "DLQ file":
				default:
					t.Errorf("%s is in %v", b, at)
				}
			}
			if inFile == 0 {
				t.Error("nothing was deleted before the kill")
			}
		})
	}
}
