package pushdlqcmd

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/cli/iostreams"
	"github.com/deadletter/deadletter/internal/sqsmove"
	"github.com/deadletter/deadletter/internal/testsupport"
	"github.com/deadletter/deadletter/internal/workflow/pushreplay"
)

// limitWorld is a push DLQ seen through a proxy that enforces SQS's
// in-flight limit, with a fault proxy in front of it (what pushdlq talks
// to): every ineligibleEvery-th message has errorCode 1005, which
// --codes 1004 does not select; the others are eligible for P1.
type limitWorld struct {
	t         *testing.T
	dlq, base string
	bodies    map[string]bool // every body: true when eligible
	limit     *testsupport.InFlightLimitProxy
	faults    *testsupport.Proxy
}

func newLimitWorld(t *testing.T, n, limit, ineligibleEvery int) *limitWorld {
	t.Helper()
	c := testsupport.SQSClient(t)
	w := &limitWorld{t: t, bodies: map[string]bool{}}
	w.dlq, w.base = testsupport.NewPushQueues(t, c, "ol", 1)
	var list []string
	for i := 0; i < n; i++ {
		code := "1004"
		if ineligibleEvery > 0 && i%ineligibleEvery == ineligibleEvery-1 {
			code = "1005"
		}
		b := `{"action":"push","priority":1,"createdAt":` + strconv.FormatInt(1763107200000+int64(i)*60_000, 10) + `,"errorCode":` + code + `,"errorMessage":"PushFailed","n":` + strconv.Itoa(i) + `}`
		w.bodies[b] = code == "1004"
		list = append(list, b)
	}
	testsupport.SendBodies(t, c, w.dlq, list, nil)
	w.limit = testsupport.NewInFlightLimitProxy(t, testsupport.SQSEndpoint(t), limit)
	w.faults = testsupport.NewProxy(t, w.limit.URL)
	return w
}

// eligible counts the eligible bodies.
func (w *limitWorld) eligible() int {
	n := 0
	for _, ok := range w.bodies {
		if ok {
			n++
		}
	}
	return n
}

// run runs pushdlq through the proxies; with answers, stdin and stderr are
// a terminal and each question reads the next answer (asked counts them).
func (w *limitWorld) run(answers []string, args ...string) (code int, stdout, stderr string, asked int) {
	ios, _, out, errOut := iostreams.Test()
	in := &answerLines{lines: answers, errOut: errOut}
	if answers != nil {
		ios.In = in
		ios.SetTTY(true, false, true)
	}
	f := NewFactory(ios, func(string) string { return "" })
	f.SQS = func(context.Context) (sqsmove.API, string, error) {
		return testsupport.SQSClientAt(w.faults.URL), "SQS via a limit proxy", nil
	}
	code = Run(context.Background(), f, append(args, "--visibility-timeout", "30s"))
	return code, out.String(), errOut.String(), in.asked
}

// replayArgs is a replay of the world's DLQ, with a journal of the test's
// unless extra names one.
// runYes is run without a terminal.
func (w *limitWorld) runYes(args ...string) (int, string, string) {
	code, out, stderr, _ := w.run(nil, args...)
	return code, out, stderr
}

// all is the set of every body.
func (w *limitWorld) all() map[string]bool {
	all := map[string]bool{}
	for b := range w.bodies {
		all[b] = true
	}
	return all
}

func (w *limitWorld) replayArgs(extra ...string) []string {
	args := []string{"replay", "--dlq", w.dlq, "--queue-base-url", w.base, "--window", "2025-11-14T00:00:00Z/2025-11-15T00:00:00Z", "--codes", "1004"}
	if !slices.Contains(extra, "--journal") {
		args = append(args, "--journal", filepath.Join(w.t.TempDir(), "journal.ndjson"))
	}
	return append(args, extra...)
}

// answerLines answers one question per Read (cmdutil.Confirm reads
// through a new bufio.Reader each time: a buffer would give it every line
// at once): the next of lines, or, for a line "QUESTION=>ANSWER", ANSWER
// to each question that has QUESTION in it (read from stderr).
type answerLines struct {
	mu     sync.Mutex
	lines  []string
	asked  int
	errOut *bytes.Buffer
	seen   int // of errOut, at the last question
}

func (a *answerLines) Read(p []byte) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asked++
	question := a.errOut.String()[a.seen:]
	a.seen = a.errOut.Len()
	for _, l := range a.lines {
		if q, answer, rule := strings.Cut(l, "=>"); rule && strings.Contains(question, q) {
			return copy(p, answer+"\n"), nil
		}
	}
	if len(a.lines) == 0 || strings.Contains(a.lines[0], "=>") {
		return 0, io.EOF
	}
	n := copy(p, a.lines[0]+"\n")
	a.lines = a.lines[1:]
	return n, nil
}

// places is where each body is: "P1", "dlq" (visible or in flight),
// "delayed" (delayed in the DLQ: fauxqs's inspection endpoint, as a
// receive cannot see a parked message for 15 minutes), or the file;
// every place a body is in, as often as it is there. It drains the
// queues.
func (w *limitWorld) places(file string) map[string][]string {
	w.t.Helper()
	c := testsupport.SQSClient(w.t)
	at := map[string][]string{}
	for _, m := range testsupport.Drain(w.t, c, w.base+"P1", time.Second) {
		at[*m.Body] = append(at[*m.Body], "P1")
	}
	for _, b := range testsupport.DelayedBodies(w.t, w.dlq) {
		at[b] = append(at[b], "delayed")
	}
	for _, m := range testsupport.Drain(w.t, c, w.dlq, 2*time.Second) {
		at[*m.Body] = append(at[*m.Body], "dlq")
	}
	if file != "" {
		for _, l := range testsupport.ReadLines(w.t, file) {
			at[gjson.Get(l, "body").Str] = append(at[gjson.Get(l, "body").Str], "file")
		}
	}
	for b := range at {
		if _, ok := w.bodies[b]; !ok {
			w.t.Errorf("a message that was never in the DLQ, in %v: %.80s", at[b], b)
		}
	}
	return at
}

// rounds counts the rounds a run said it read on in, and the first.
func rounds(stderr string) int {
	return 1 + strings.Count(stderr, "reading on past SQS's in-flight limit")
}

// checkAddsUp checks the summary's invariant over the whole run.
func checkAddsUp(t *testing.T, s pushreplay.Summary) {
	t.Helper()
	if s.Sent+s.Failed+s.Uncertain+s.HoldLost+s.Abandoned != s.Eligible || s.Eligible+s.Ineligible != s.Scanned {
		t.Errorf("the summary does not add up: %+v", s)
	}
}

// A park replay of a DLQ deeper than the in-flight limit reads on in one
// run: each round's messages are sent or parked, so deleted, and the next
// scan reads on. Every eligible message is in its target once, every
// ineligible one parked (delayed) in the DLQ once, nothing else; exit 0
// with no "run again"; the summary adds up over the rounds, and the
// journal (one run event) ends with the same summary.
func TestParkReplayReadsOnPastTheInFlightLimitInOneRun(t *testing.T) {
	const n, limit = 90, 25
	w := newLimitWorld(t, n, limit, 3)
	journal := filepath.Join(t.TempDir(), "j.ndjson")
	code, out, stderr, _ := w.run(nil, w.replayArgs("--ineligible", "park", "--yes", "-o", "json", "--journal", journal)...)
	var sum pushreplay.Summary
	if code != 0 || json.Unmarshal([]byte(out), &sum) != nil {
		t.Fatalf("exit %d, want 0:\n%s\n%s", code, out, stderr)
	}
	if sum.Scanned != n || sum.Eligible != w.eligible() || sum.Sent != w.eligible() || sum.Parked != n-w.eligible() || sum.Ineligible != n-w.eligible() ||
		sum.Released != 0 || sum.Delayed != 0 || sum.InFlightElsewhere != 0 {
		t.Errorf("summary %+v, want %d scanned, %d sent, %d parked, nothing released or delayed", sum, n, w.eligible(), n-w.eligible())
	}
	checkAddsUp(t, sum)
	if r := rounds(stderr); r < 3 || w.limit.Refused() < r-1 {
		t.Errorf("%d rounds, %d receives refused: want the limit met and read past in rounds:\n%s", r, w.limit.Refused(), stderr)
	}
	if strings.Contains(stderr, "read the first") || strings.Contains(stderr, "run again") {
		t.Errorf("a run that read the whole DLQ says it did not:\n%s", stderr)
	}
	lines := testsupport.ReadLines(t, journal)
	runs := 0
	for _, l := range lines {
		if gjson.Get(l, "event").Str == sqsmove.EvRun {
			runs++
		}
	}
	var js pushreplay.Summary
	if runs != 1 || gjson.Get(lines[len(lines)-1], "event").Str != sqsmove.EvSummary || json.Unmarshal([]byte(gjson.Get(lines[len(lines)-1], "info").Raw), &js) != nil {
		t.Fatalf("journal: %d run events, last line %s; want one run and the summary", runs, lines[len(lines)-1])
	}
	if a, b := mustJSON(t, js), mustJSON(t, sum); a != b {
		t.Errorf("the journal's summary is not the one printed:\n%s\n%s", a, b)
	}
	for b, at := range w.places("") {
		want := "delayed"
		if w.bodies[b] {
			want = "P1"
		}
		if len(at) != 1 || at[0] != want {
			t.Errorf("a message is in %v, want [%s]: %.80s", at, want, b)
		}
	}
	t.Logf("%d messages, limit %d: %d scans, %d receives refused; sent %d, parked %d", n, limit, rounds(stderr), w.limit.Refused(), sum.Sent, sum.Parked)
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A copy the run parked that comes back during the run (here its delay is
// rewritten to 0; in SQS it takes a run past 15 minutes) is never parked
// again nor counted: the scan that receives it stops, the run stops
// reading on and says how far it got (exit 3). Each message is parked at
// most once, and each is in its target or the DLQ once.
func TestParkReplayPastTheLimitNeverParksItsOwnCopy(t *testing.T) {
	const n, limit = 90, 25
	w := newLimitWorld(t, n, limit, 3)
	var mu sync.Mutex
	parked := map[string]int{}
	w.faults.SetHook(func(op string, body []byte) ([]byte, *testsupport.Reply) {
		if op != "SendMessageBatch" && op != "SendMessage" {
			return nil, nil
		}
		var in map[string]any
		if json.Unmarshal(body, &in) != nil || in["QueueUrl"] != w.dlq {
			return nil, nil
		}
		mu.Lock()
		defer mu.Unlock()
		entries, _ := in["Entries"].([]any)
		if op == "SendMessage" {
			entries = []any{in}
		}
		for _, e := range entries {
			e := e.(map[string]any)
			e["DelaySeconds"] = 0
			parked[e["MessageBody"].(string)]++
		}
		nb, _ := json.Marshal(in)
		return nb, nil
	})
	code, out, stderr, _ := w.run(nil, w.replayArgs("--ineligible", "park", "--yes", "-o", "json")...)
	var sum pushreplay.Summary
	if code != 3 || json.Unmarshal([]byte(out), &sum) != nil {
		t.Fatalf("exit %d, want 3:\n%s\n%s", code, out, stderr)
	}
	if !strings.Contains(stderr, "received a copy this run parked") || !strings.Contains(stderr, "pushdlq: read the first") {
		t.Errorf("no word of the copy, or of how far the run got:\n%s", stderr)
	}
	checkAddsUp(t, sum)
	if sum.Parked != sum.Ineligible || sum.Sent != sum.Eligible || sum.Scanned > n {
		t.Errorf("summary %+v: want each message read parked or sent once, copies not counted", sum)
	}
	for b, k := range parked {
		if k != 1 {
			t.Errorf("parked %d times: %.80s", k, b)
		}
	}
	places := w.places("")
	for b, eligible := range w.bodies {
		at := places[b]
		if len(at) != 1 || (at[0] == "P1" && !eligible) || (parked[b] > 0 && at[0] != "dlq") {
			t.Errorf("a message (eligible %v) is in %v, want once, in P1 only when eligible: %.80s", eligible, at, b)
		}
	}
	t.Logf("%d messages, limit %d: %d rounds; scanned %d, sent %d, parked %d", n, limit, rounds(stderr), sum.Scanned, sum.Sent, sum.Parked)
}

// Asked (no --yes), a park replay past the limit shows each round's plan
// and asks before each round; declining a later round stops there: what
// the earlier rounds moved stays moved, that round's messages are
// released (its eligible ones counted abandoned, so the summary adds up)
// and the run exits 3.
func TestAskedParkReplayPastTheLimitAsksEachRound(t *testing.T) {
	const n, limit = 60, 25
	t.Run("yes to each", func(t *testing.T) {
		w := newLimitWorld(t, n, limit, 3)
		code, out, stderr, asked := w.run([]string{"yes", "yes", "yes", "yes", "yes", "yes"}, w.replayArgs("--ineligible", "park", "-o", "json")...)
		var sum pushreplay.Summary
		if code != 0 || json.Unmarshal([]byte(out), &sum) != nil || sum.Sent != w.eligible() || sum.Parked != n-w.eligible() {
			t.Fatalf("exit %d, want 0 with every message sent or parked:\n%s\n%s", code, out, stderr)
		}
		checkAddsUp(t, sum)
		plans := strings.Count(stderr, "\nPlan for ")
		if plans < 2 || asked != plans || strings.Count(stderr, "read on past SQS's in-flight limit: what this round read") != plans-1 {
			t.Errorf("%d plans, %d questions: want a plan and a question for each round:\n%s", plans, asked, stderr)
		}
		for b, at := range w.places("") {
			if want := map[bool]string{true: "P1", false: "delayed"}[w.bodies[b]]; len(at) != 1 || at[0] != want {
				t.Errorf("a message is in %v, want [%s]: %.80s", at, want, b)
			}
		}
	})
	t.Run("no to the second", func(t *testing.T) {
		w := newLimitWorld(t, n, limit, 3)
		code, out, stderr, asked := w.run([]string{"yes", "no"}, w.replayArgs("--ineligible", "park", "-o", "json")...)
		var sum pushreplay.Summary
		if code != 3 || json.Unmarshal([]byte(out), &sum) != nil || asked != 2 {
			t.Fatalf("exit %d after %d questions, want 3 after 2:\n%s\n%s", code, asked, out, stderr)
		}
		checkAddsUp(t, sum)
		if sum.Sent == 0 || sum.Abandoned == 0 || sum.Released == 0 || !strings.Contains(stderr, "nothing more sent: the ") {
			t.Errorf("summary %+v: want round 1 sent, round 2 abandoned and released:\n%s", sum, stderr)
		}
		sent, parked := 0, 0
		for b, at := range w.places("") {
			switch {
			case len(at) != 1:
				t.Errorf("a message is in %v, want one place: %.80s", at, b)
			case at[0] == "P1" && w.bodies[b]:
				sent++
			case at[0] == "delayed" && !w.bodies[b]:
				parked++
			case at[0] != "dlq":
				t.Errorf("a message (eligible %v) is in %s: %.80s", w.bodies[b], at[0], b)
			}
		}
		if sent != sum.Sent || parked != sum.Parked {
			t.Errorf("%d in P1 and %d parked, the summary says %d and %d", sent, parked, sum.Sent, sum.Parked)
		}
	})
}

// A declined later round names its messages in agreement with their
// number: it said "the 1 message round 2 read are released" (issue 38
// item 9). (Which round of a live run reads exactly one message depends
// on SQS's batch sizes; the run above checks the line is printed.)
func TestDeclinedRoundLineAgreesWithItsCount(t *testing.T) {
	for n, want := range map[int]string{
		1: "nothing more sent: the 1 message round 2 read is released; what the earlier rounds sent or parked stays so",
		7: "nothing more sent: the 7 messages round 2 read are released; what the earlier rounds sent or parked stays so",
	} {
		p := &pushreplay.Plan{Round: 2}
		p.Scanned = n
		if got := declinedRoundLine(p); got != want {
			t.Errorf("%d read: %q\nwant %q", n, got, want)
		}
	}
}

func exportSummary(t *testing.T, out string) ExportSummary {
	t.Helper()
	var s ExportSummary
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("summary %q: %v", out, err)
	}
	return s
}

// export --delete --yes of a DLQ deeper than the in-flight limit reads on
// in one run: each round's messages are synced to FILE.partial and
// deleted, and the next scan appends to the same file. The file holds
// every message once, the DLQ is empty, exit 0 with no "run again", and
// the summary's counts, size and sha256 are the whole file's.
func TestExportDeleteReadsOnPastTheInFlightLimitInOneRun(t *testing.T) {
	const n, limit = 90, 25
	w := newLimitWorld(t, n, limit, 0)
	file := filepath.Join(t.TempDir(), "drained.ndjson")
	code, out, stderr, _ := w.run(nil, "export", "--dlq", w.dlq, "--out", file, "--delete", "--yes", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d, want 0:\n%s\n%s", code, out, stderr)
	}
	s := exportSummary(t, out)
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	digest := sha256.Sum256(data)
	if s.Exported != n || s.Deleted != n || s.DeleteFailed != 0 || s.Released != 0 || s.Bytes != int64(len(data)) || s.SHA256 == nil || *s.SHA256 != hex.EncodeToString(digest[:]) {
		t.Errorf("summary %+v, want %d exported and deleted, the file's %d bytes and digest", s, n, len(data))
	}
	if r := rounds(stderr); r < 3 || strings.Contains(stderr, "read the first") || strings.Contains(stderr, "run again") {
		t.Errorf("%d scans; want rounds past the limit and no note of a stop:\n%s", r, stderr)
	}
	if _, err := os.Stat(file + ".partial"); !os.IsNotExist(err) {
		t.Errorf("the partial file is left: %v", err)
	}
	for b, at := range w.places(file) {
		if len(at) != 1 || at[0] != "file" {
			t.Errorf("a message is in %v, want in the file once: %.80s", at, b)
		}
	}
	if !testsupport.QueueEmpty(t, testsupport.SQSClient(t), w.dlq) {
		t.Error("the DLQ is not empty")
	}
	t.Logf("%d messages, limit %d: %d scans, %d receives refused", n, limit, rounds(stderr), w.limit.Refused())
}

// An export --delete that stops in a later round (a delete refused, a
// receive that fails) keeps FILE.partial, which holds the only copy of
// what the earlier rounds deleted, and says how many that is; it never
// says "nothing was deleted". Nothing is lost: each message is in the
// file or the DLQ, and in both only when its delete failed.
func TestExportDeleteStoppedInALaterRoundKeepsThePartialFile(t *testing.T) {
	const n, limit = 90, 25
	for _, tc := range []struct {
		name string
		fail string // the operation refused from round 2 on
		code int
	}{
		{"delete refused", "DeleteMessageBatch", 3},
		{"receive fails", "ReceiveMessage", 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newLimitWorld(t, n, limit, 0)
			var mu sync.Mutex
			deletes, round2 := 0, false
			w.faults.SetHook(func(op string, _ []byte) ([]byte, *testsupport.Reply) {
				mu.Lock()
				defer mu.Unlock()
				switch {
				case op == "ReceiveMessage" && deletes > 0:
					round2 = true // the first round's messages were deleted: reading on
				case op == "DeleteMessageBatch":
					deletes++
				}
				if round2 && op == tc.fail {
					return nil, &testsupport.Reply{Status: 400, Body: testsupport.AWSJSONError("AccessDenied", "not authorized to perform: sqs:"+strings.ToLower(op))}
				}
				return nil, nil
			})
			file := filepath.Join(t.TempDir(), "drained.ndjson")
			code, out, stderr, _ := w.run(nil, "export", "--dlq", w.dlq, "--out", file, "--delete", "--yes", "-o", "json")
			if code != tc.code {
				t.Fatalf("exit %d, want %d:\n%s\n%s", code, tc.code, out, stderr)
			}
			if _, err := os.Stat(file); !os.IsNotExist(err) {
				t.Errorf("%s was committed: %v", file, err)
			}
			partial := file + ".partial"
			m := regexp.MustCompile(`export stopped: (\d+) messages were deleted from the DLQ, each once its line was synced to (\S+); .* It holds (\d+) messages? more, which were not deleted`).FindStringSubmatch(stderr)
			if m == nil || m[2] != partial || strings.Contains(stderr, "nothing was deleted") {
				t.Fatalf("no word of what was deleted and where it is:\n%s", stderr)
			}
			deleted, _ := strconv.Atoi(m[1])
			more, _ := strconv.Atoi(m[3])
			if tc.code == 3 {
				if s := exportSummary(t, out); s.File != partial || s.Deleted != deleted || s.DeleteFailed == 0 || s.Exported != deleted+s.DeleteFailed {
					t.Errorf("summary %+v: want the partial file, %d deleted and the rest failed", s, deleted)
				}
			}
			onlyFile, both := 0, 0
			for b, at := range w.places(partial) {
				slices.Sort(at)
				switch strings.Join(at, " ") {
				case "file":
					onlyFile++
				case "dlq file":
					both++
				case "dlq":
				default:
					t.Errorf("a message is in %v: %.80s", at, b)
				}
			}
			// In both: the messages read and not deleted (the second
			// round's, or those received as the first scan stopped).
			if onlyFile != deleted || both != more || (tc.code == 3 && both == 0) || len(w.places("")) != 0 {
				t.Errorf("%d only in the file, %d in both; said %d deleted, %d more", onlyFile, both, deleted, more)
			}
		})
	}
}
