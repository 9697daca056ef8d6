package main_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/sqsmove"
	"github.com/deadletter/deadletter/internal/testsupport"
)

var bin string

// TestMain builds the binary (or takes the build PUSHDLQ_E2E_BIN names).
func TestMain(m *testing.M) { testsupport.RunWithBinary(m, "pushdlq", "PUSHDLQ_E2E_BIN", &bin) }

// world is a DLQ and priority queues P1 and P2 on the test SQS server.
type world struct {
	t        *testing.T
	c        *sqs.Client
	endpoint string
	dlq      string
	base     string
	bodies   []string
	ids      []string // SQS message ids of bodies
	stateDir string
	// tag makes the notification ids of the world's seed its own
	// (n-TAG-I): the replay guard counts a notification's replays across
	// every run that records to one state folder.
	tag string
}

const (
	winStart = "2025-11-14T08:30:00Z"
	winEnd   = "2025-11-14T09:00:00Z"
	inWindow = int64(1763109600000) // 08:40
	before   = int64(1763105400000) // 07:30
)

func newWorld(t *testing.T, priorities ...int) *world {
	t.Helper()
	endpoint := testsupport.SQSEndpoint(t)
	w := &world{t: t, c: testsupport.SQSClientAt(endpoint), endpoint: endpoint, stateDir: t.TempDir(), tag: testsupport.RandomHex(3) + "-"}
	w.dlq, w.base = testsupport.NewPushQueues(t, w.c, "e2e", priorities...)
	return w
}

// seededWorld is a world with priority queues P1 and P2 whose DLQ holds n
// seeded messages.
func seededWorld(t *testing.T, n int) *world {
	t.Helper()
	w := newWorld(t, 1, 2)
	w.seed(n)
	return w
}

// seed puts a realistic mix on the DLQ: eligible 1004 and 2003 failures in
// the window at priorities 1 and 2 (createdAt in all three forms), a code
// that is not selected, failures before the window, manual redrives
// without error metadata and malformed bodies.
func (w *world) seed(n int) {
	for i := range n {
		var b string
		created := inWindow + int64(i)*1000
		switch i % 8 {
		case 0, 1:
			b = fmt.Sprintf(`{"action":"push","id":%d,"notificationId":"n-%s%d","priority":%d,"createdAt":%d,"errorCode":1004,"errorMessage":"SNS throttled","future":{"field":[1,2]}}`, i, w.tag, i, 1+i%2, created)
		case 2:
			b = fmt.Sprintf(`{"action":"schedule","id":%d,"priority":2,"createdAt":"%d","errorCode":2003,"errorMessage":"not found"}`, i, created)
		case 3:
			b = fmt.Sprintf(`{"action":"push","id":%d,"priority":1,"createdAt":"2025-11-14T08:45:%02dZ","errorCode":1004,"errorMessage":"x"}`, i, i%60)
		case 4:
			b = fmt.Sprintf(`{"action":"push","id":%d,"priority":1,"createdAt":%d,"errorCode":1001,"errorMessage":"publish"}`, i, created)
		case 5:
			b = fmt.Sprintf(`{"action":"push","id":%d,"priority":2,"createdAt":%d,"errorCode":1004,"errorMessage":"old"}`, i, before)
		case 6:
			b = fmt.Sprintf(`{"action":"push","id":%d,"priority":1,"createdAt":%d}`, i, created)
		case 7:
			if i%16 == 7 {
				b = fmt.Sprintf(`not json %d`, i)
			} else {
				b = fmt.Sprintf(`{"action":"push","id":%d,"createdAt":%d,"errorCode":1004}`, i, created)
			}
		}
		w.bodies = append(w.bodies, b)
	}
	w.ids = testsupport.SendBodies(w.t, w.c, w.dlq, w.bodies, func(i int) map[string]types.MessageAttributeValue {
		return map[string]types.MessageAttributeValue{"origin": {DataType: aws.String("String"), StringValue: aws.String(fmt.Sprint("push-", i))}}
	})
}

// eligible reports where a seeded body must end up under --codes 1004,2003
// and the test window ("" = stays in the DLQ).
func eligible(body string) string {
	switch gjson.Get(body, "errorCode").Int() {
	case 1004, 2003:
	default:
		return ""
	}
	if !gjson.Get(body, "priority").Exists() || gjson.Get(body, "createdAt").Int() == before {
		return ""
	}
	return "P" + gjson.Get(body, "priority").String()
}

func (w *world) run(env []string, stdin string, args ...string) (stdout, stderr string, code int) {
	w.t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(w.env(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		w.t.Fatal(err)
	}
	return out.String(), errOut.String(), code
}

// env is the environment of a run against the test world: its SQS server,
// test credentials, and a state folder of its own.
func (w *world) env() []string {
	return append(os.Environ(), "AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=testtesttest", "AWS_REGION=us-east-1",
		"AWS_EC2_METADATA_DISABLED=true", "XDG_STATE_HOME="+w.stateDir, "AWS_ENDPOINT_URL="+w.endpoint)
}

// command is the binary with the test world's environment; TMPDIR is a
// directory of its own, so that a spool left behind can be seen.
func (w *world) command(tmp string, args ...string) *exec.Cmd {
	return w.commandOf(bin, tmp, args...)
}

// commandOf is command with another build of the binary.
func (w *world) commandOf(binary, tmp string, args ...string) *exec.Cmd {
	cmd := exec.Command(binary, args...)
	cmd.Env = append(w.env(), "TMPDIR="+tmp)
	return cmd
}

func (w *world) replayArgs(extra ...string) []string {
	return append([]string{"replay", "--dlq", w.dlq, "--queue-base-url", w.base, "--window", winStart + "/" + winEnd, "--codes", "1004,2003"}, extra...)
}

// places drains the DLQ and the given priority queues and returns, for each
// body, where it is; attributes must have survived.
func (w *world) places(priorities ...int) map[string][]string {
	w.t.Helper()
	out := map[string][]string{}
	queues := map[string]string{"DLQ": w.dlq}
	for _, p := range priorities {
		queues[fmt.Sprint("P", p)] = fmt.Sprintf("%sP%d", w.base, p)
	}
	for name, u := range queues {
		for _, m := range testsupport.Drain(w.t, w.c, u, 3*time.Second) {
			b := aws.ToString(m.Body)
			out[b] = append(out[b], name)
			if v := m.MessageAttributes["origin"].StringValue; v == nil || !strings.HasPrefix(*v, "push-") {
				w.t.Errorf("%s: message attributes lost in %s: %v", b, name, m.MessageAttributes)
			}
		}
	}
	return out
}

// exactlyOnce checks every seeded body is in exactly the place want says,
// allowing the listed duplicates.
func (w *world) exactlyOnce(places map[string][]string, want func(string) string, dupOK map[string]bool) {
	w.t.Helper()
	for _, b := range w.bodies {
		where := want(b)
		if where == "" {
			where = "DLQ"
		}
		got := places[b]
		if len(got) == 2 && dupOK[b] && slices.Contains(got, where) {
			continue
		}
		if len(got) != 1 || got[0] != where {
			w.t.Errorf("%s is in %v, want exactly [%s]", b, got, where)
		}
	}
}

func TestReplayDryRunChangesNothing(t *testing.T) {
	t.Parallel()
	w := seededWorld(t, 40)
	stdout, stderr, code := w.run(nil, "", w.replayArgs("--dry-run", "-o", "json")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"Plan for", "eligible 20", "PushFailed", "NotificationNotFound", "error code not selected", "before the window", "body is not JSON", "no priority", "account 000000000000", "receive count"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("plan lacks %q:\n%s", want, stderr)
		}
	}
	if gjson.Get(stdout, "dry_run").Bool() != true || gjson.Get(stdout, "eligible").Int() != 20 || gjson.Get(stdout, "sent").Int() != 0 || gjson.Get(stdout, "released").Int() != 40 {
		t.Errorf("summary %s", stdout)
	}
	// Released at once, not after the visibility timeout.
	q, _ := sqsmove.Describe(t.Context(), w.c, w.dlq)
	if q.Visible != 40 {
		t.Errorf("after a dry run %d visible, want 40", q.Visible)
	}
	w.exactlyOnce(w.places(1, 2), func(string) string { return "" }, nil)
}

func TestReplayMovesTheSliceAndNothingElse(t *testing.T) {
	t.Parallel()
	w := seededWorld(t, 48)
	stdout, stderr, code := w.run(nil, "", w.replayArgs("--yes", "-o", "ndjson", "--rate", "1000")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	summary := lines[len(lines)-1]
	if gjson.Get(summary, "type").Str != "summary" || gjson.Get(summary, "sent").Int() != 24 || gjson.Get(summary, "released").Int() != 24 || gjson.Get(summary, "failed").Int() != 0 {
		t.Fatalf("summary %s", summary)
	}
	sent := 0
	for _, l := range lines[:len(lines)-1] {
		switch gjson.Get(l, "outcome").Str {
		case "sent":
			sent++
			if gjson.Get(l, "new_message_id").Str == "" || !strings.Contains(gjson.Get(l, "target").Str, "P") {
				t.Errorf("sent line %s", l)
			}
		case "released":
			if gjson.Get(l, "reason").Str == "" {
				t.Errorf("released without a reason: %s", l)
			}
		default:
			t.Errorf("unexpected line %s", l)
		}
	}
	if sent != 24 {
		t.Errorf("%d sent lines", sent)
	}
	// Bodies arrive byte for byte (unknown fields kept) in the right queue.
	w.exactlyOnce(w.places(1, 2), eligible, nil)
	journal := gjson.Get(summary, "journal").Str
	if !strings.HasPrefix(journal, w.stateDir) {
		t.Errorf("journal %q not under XDG_STATE_HOME", journal)
	}
	// The journal's summary is the one printed, released count included.
	jl := testsupport.ReadLines(t, journal)
	js := gjson.Get(jl[len(jl)-1], "info")
	for _, k := range []string{"sent", "released", "failed", "uncertain", "possible_duplicates"} {
		if js.Get(k).Raw != gjson.Get(summary, k).Raw {
			t.Errorf("%s: %s in the journal's summary, %s on stdout", k, js.Get(k).Raw, gjson.Get(summary, k).Raw)
		}
	}
}

func TestReplayParksLikeTheProcessor(t *testing.T) {
	t.Parallel()
	w := seededWorld(t, 16)
	stdout, stderr, code := w.run(nil, "", w.replayArgs("--yes", "--ineligible", "park", "-o", "json")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if gjson.Get(stdout, "sent").Int() != 8 || gjson.Get(stdout, "parked").Int() != 8 {
		t.Fatalf("summary %s", stdout)
	}
	q, _ := sqsmove.Describe(t.Context(), w.c, w.dlq)
	if q.Delayed != 8 || q.Visible != 0 || q.InFlight != 0 {
		t.Errorf("DLQ after parking: %+v, want 8 delayed (900 s)", q)
	}
}

// P2 does not exist: its canary fails, nothing else is sent there, those
// messages stay in the DLQ, P1 is replayed, and the exit code is 3.
func TestReplayMissingTargetQueue(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 1)
	w.seed(32)
	p2 := sqsmove.Name(w.base) + "P2"
	// The dry run checks every target queue: it names the missing one, and
	// exits 3 since a replay would fail its messages.
	_, stderr, code := w.run(nil, "", w.replayArgs("--dry-run")...)
	if code != 3 || !regexp.MustCompile(`-> `+p2+`\s+MISSING: \S*NonExistentQueue`).MatchString(stderr) {
		t.Errorf("dry run: exit %d, want 3 with %s MISSING: NonExistentQueue in the plan: %s", code, p2, stderr)
	}
	if strings.Contains(stderr, sqsmove.Name(w.base)+"P1  MISSING") {
		t.Errorf("P1 exists: %s", stderr)
	}
	stdout, stderr, code := w.run(nil, "", w.replayArgs("--yes", "-o", "json")...)
	if code != 3 {
		t.Fatalf("exit %d, want 3: %s", code, stderr)
	}
	// Why, per target, on stderr (not only in the journal).
	if !regexp.MustCompile(`  ` + p2 + `: \d+ messages failed: \S*NonExistentQueue`).MatchString(stderr) {
		t.Errorf("stderr does not give the reason for %s: %s", p2, stderr)
	}
	if gjson.Get(stdout, "failures.0.target").Str != w.base+"P2" || !strings.Contains(gjson.Get(stdout, "failures.0.reason").Str, "NonExistentQueue") {
		t.Errorf("summary failures %s", gjson.Get(stdout, "failures").Raw)
	}
	failed := gjson.Get(stdout, "failed").Int()
	sentP1 := gjson.Get(stdout, "sent").Int()
	if sentP1+failed != 16 || failed == 0 {
		t.Fatalf("summary %s", stdout)
	}
	w.exactlyOnce(w.places(1), func(b string) string {
		if e := eligible(b); e == "P1" {
			return e
		}
		return ""
	}, nil)
}

// The DLQ holds nothing but malformed bodies: nothing is eligible, nothing
// is lost, each is reported with its reason.
func TestReplayMalformedOnly(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 1)
	w.bodies = []string{"[1,2,3]", `{"priority":"high","createdAt":1}`, `{"priority":1,"createdAt":"tomorrow","errorCode":1004}`, "not json"}
	testsupport.SendBodies(t, w.c, w.dlq, w.bodies, nil)
	stdout, stderr, code := w.run(nil, "", append(w.replayArgs("--yes", "-o", "ndjson"), "--codes", "*")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, reason := range []string{"body_not_object", "bad_priority", "bad_created_at", "body_not_json"} {
		if !strings.Contains(stdout, `"reason":"`+reason+`"`) {
			t.Errorf("no message reported with %s:\n%s", reason, stdout)
		}
	}
	q, _ := sqsmove.Describe(t.Context(), w.c, w.dlq)
	if q.Visible != int64(len(w.bodies)) {
		t.Errorf("%d visible, want %d", q.Visible, len(w.bodies))
	}
}

// The process is killed (SIGKILL) in the middle of its fourth batch: once
// after the batch reached the target but before the tool heard back (the
// batch is in flight: the resumed run sends it again, and those are the
// only duplicates, all listed in the journal), and once after the target
// accepted it but before the DLQ delete (the resumed run deletes those
// from the DLQ without sending them again: no duplicate at all).
func TestReplayKilledMidRunThenResumed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, op string
		nth      int // the call that never returns
	}{
		{"before the send was confirmed", "SendMessageBatch", 4}, // two canaries, then the second batch
		{"before the delete", "DeleteMessageBatch", 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := seededWorld(t, 160)
			_, stdout, uncertain := w.killThenResume(bin, tc.op, tc.nth)
			skipped := gjson.Get(stdout, "skipped_duplicates").Int()
			if tc.op == "SendMessageBatch" && (len(uncertain) == 0 || len(uncertain) > 10 || skipped != 0) {
				t.Errorf("%d in flight per the journal (want one batch), %d skipped", len(uncertain), skipped)
			}
			if tc.op == "DeleteMessageBatch" && (len(uncertain) != 0 || skipped == 0 || skipped > 10) {
				t.Errorf("%d in flight per the journal (want 0), %d skipped (want the batch)", len(uncertain), skipped)
			}
			// The summary lists every message sent again: the possible duplicates.
			if listed := gjson.Get(stdout, "possible_duplicate_ids").Array(); len(listed) != len(uncertain) || gjson.Get(stdout, "possible_duplicates").Int() != int64(len(uncertain)) {
				t.Errorf("summary lists %d possible duplicates, the journal had %d in flight: %s", len(listed), len(uncertain), stdout)
			}
			w.exactlyOnce(w.places(1, 2), eligible, w.bodiesOf(uncertain))
		})
	}
}

// hangProxy is a proxy in front of the world's SQS whose hung calls never
// answer while the test runs.
type hangProxy struct {
	*testsupport.Proxy
	release chan struct{}
}

func (w *world) hangProxy() *hangProxy {
	p := &hangProxy{Proxy: testsupport.NewProxy(w.t, w.endpoint), release: make(chan struct{})}
	w.t.Cleanup(func() { close(p.release) }) // runs before the proxy closes
	return p
}

// hang blocks a call until the test ends: the client never hears back.
func (p *hangProxy) hang() { <-p.release }

// hangAt hangs the nth call of op, after it reached SQS (reached) or
// before; the channel is closed when it does.
func (p *hangProxy) hangAt(op string, nth int, reached bool) <-chan struct{} {
	var mu sync.Mutex
	calls := 0
	stuck := make(chan struct{})
	block := func(o string) {
		if o != op {
			return
		}
		mu.Lock()
		calls++
		n := calls
		mu.Unlock()
		if n == nth {
			close(stuck)
			p.hang()
		}
	}
	if reached {
		p.SetAfter(func(op string, _, resp []byte) []byte { block(op); return resp })
	} else {
		p.SetHook(func(op string, _ []byte) ([]byte, *testsupport.Reply) { block(op); return nil, nil })
	}
	return stuck
}

// killReplayAt runs a replay (binary: bin, or another build) at
// concurrency 1 with the visibility timeout given, through a proxy that
// hangs its nth call of op (a send after it reached SQS, a delete before),
// kills it (SIGKILL) there, and returns its journal.
func (w *world) killReplayAt(binary, op string, nth int, visibility string) (journal string) {
	w.t.Helper()
	proxy := w.hangProxy()
	stuck := proxy.hangAt(op, nth, op == "SendMessageBatch")
	journal = filepath.Join(w.t.TempDir(), "journal.ndjson")
	args := append(w.replayArgs("--yes", "--journal", journal, "--concurrency", "1", "--visibility-timeout", visibility, "-o", "json"), "--endpoint-url", proxy.URL)
	testsupport.StartProc(w.t, w.commandOf(binary, w.t.TempDir(), args...)).KillWhen(w.t, 60*time.Second, fmt.Sprintf("the run never reached %s call %d", op, nth), stuck)
	return journal
}

// killThenResume is killReplayAt (visibility 3 s) then resumeAfterKill,
// with this build.
func (w *world) killThenResume(binary, op string, nth int) (journal, summary string, uncertain map[string]bool) {
	w.t.Helper()
	journal = w.killReplayAt(binary, op, nth, "3s")
	summary, uncertain = w.resumeAfterKill(journal)
	return journal, summary, uncertain
}

// resumeAfterKill waits until what a killed run held is visible again (it
// ran with --visibility-timeout 3s), resumes its journal, which must exit
// 0 and list as possible duplicates only messages the journal has in
// flight. It returns the resume's summary and those in flight.
func (w *world) resumeAfterKill(journal string) (summary string, uncertain map[string]bool) {
	w.t.Helper()
	time.Sleep(4 * time.Second)
	uncertain = journalUncertain(w.t, journal)
	stdout, stderr, code := w.run(nil, "", w.replayArgs("--yes", "--resume", journal, "-o", "json")...)
	if code != 0 {
		w.t.Fatalf("resume: exit %d: %s", code, stderr)
	}
	for _, id := range gjson.Get(stdout, "possible_duplicate_ids").Array() {
		if !uncertain[id.Str] {
			w.t.Errorf("%s listed as a possible duplicate, but the journal did not have it in flight", id.Str)
		}
	}
	return stdout, uncertain
}

// bodiesOf is the set of seeded bodies whose message ids are in ids.
func (w *world) bodiesOf(ids map[string]bool) map[string]bool {
	out := map[string]bool{}
	for i, b := range w.bodies {
		out[b] = ids[w.ids[i]]
	}
	return out
}

// writeJournal writes events to a new journal and returns its path.
func writeJournal(t *testing.T, events ...sqsmove.Event) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "journal.ndjson")
	j, err := sqsmove.OpenJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range events {
		if err := j.Write(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// killedHolding is what the journal of a run of the DLQ dlq holds when the
// run was killed after it journalled holding ids (visible again since a
// minute ago).
func killedHolding(dlq string, ids []string) []sqsmove.Event {
	return []sqsmove.Event{{Event: sqsmove.EvRun, Target: dlq},
		{Event: sqsmove.EvHeld, IDs: ids, Until: time.Now().Add(-time.Minute).UTC().Format(time.RFC3339Nano)}}
}

// journalUncertain returns the message ids the journal shows in flight.
func journalUncertain(t *testing.T, path string) map[string]bool {
	t.Helper()
	r, err := sqsmove.ReadJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	return r.Uncertain
}

func TestInspectExportAndReplayFromFile(t *testing.T) {
	t.Parallel()
	w := seededWorld(t, 24)
	stdout, stderr, code := w.run(nil, "", "inspect", "--dlq", w.dlq, "--all", "-o", "json")
	if code != 0 {
		t.Fatalf("inspect: exit %d: %s", code, stderr)
	}
	if gjson.Get(stdout, "scanned").Int() != 24 || gjson.Get(stdout, "suggestion.code").Int() != 1004 ||
		gjson.Get(stdout, "suggested_args").Str != "--window 2025-11-14T08:40:00Z/2025-11-14T08:46:00Z --codes 1004" || gjson.Get(stdout, "no_error_metadata").Int() == 0 {
		t.Errorf("inspect report %s", stdout)
	}
	if !strings.Contains(stderr, "receive count") {
		t.Errorf("inspect does not say it raises the receive count: %s", stderr)
	}
	table, _, _ := w.run(nil, "", "inspect", "--dlq", w.dlq, "--sample", "5")
	if !strings.Contains(table, "Scanned     5 messages (a sample)") {
		t.Errorf("inspect table:\n%s", table)
	}

	file := filepath.Join(t.TempDir(), "dlq.ndjson")
	stdout, stderr, code = w.run(nil, "", "export", "--dlq", w.dlq, "--out", file, "--delete", "--yes", "-o", "json")
	if code != 0 || gjson.Get(stdout, "exported").Int() != 24 || gjson.Get(stdout, "deleted").Int() != 24 {
		t.Fatalf("export: exit %d %s %s", code, stdout, stderr)
	}
	if _, err := os.Stat(file + ".partial"); err == nil {
		t.Error("the partial file was left behind")
	}
	if !testsupport.QueueEmpty(t, w.c, w.dlq) {
		t.Fatal("export --delete left messages in the DLQ")
	}
	exported := testsupport.ReadLines(t, file)
	if len(exported) != 24 || gjson.Get(exported[0], "message_attributes.origin.string_value").Str == "" || gjson.Get(exported[0], "attributes.SentTimestamp").Str == "" {
		t.Fatalf("export file: %d lines, first %s", len(exported), exported[0])
	}
	if _, _, code := w.run(nil, "", "export", "--dlq", w.dlq, "--out", file); code != 2 {
		t.Errorf("export over an existing file: exit %d, want 2", code)
	}

	stdout, stderr, code = w.run(nil, "", "replay", "--from-file", file, "--queue-base-url", w.base, "--window", winStart+"/"+winEnd, "--codes", "1004,2003", "--yes", "-o", "json")
	if code != 0 || gjson.Get(stdout, "sent").Int() != 12 {
		t.Fatalf("replay --from-file: exit %d %s %s", code, stdout, stderr)
	}
	places := w.places(1, 2)
	for _, b := range w.bodies {
		if e := eligible(b); e != "" && !slices.Equal(places[b], []string{e}) {
			t.Errorf("%s in %v, want [%s]", b, places[b], e)
		}
	}
}

func TestReplayFromEnvAndGuardrails(t *testing.T) {
	t.Parallel()
	w := seededWorld(t, 8)
	env := []string{"PUSH_DLQ_QUEUE_URL=" + w.dlq, "PUSH_QUEUE_BASE_URL=" + w.base,
		"PROCESS_START_AT=" + winStart, "PROCESS_END_AT=" + winEnd, "PROCESS_ERROR_CODES=1004,2003"}
	stdout, stderr, code := w.run(env, "", "replay", "--from-env", "--dry-run", "-o", "json")
	if code != 0 || gjson.Get(stdout, "eligible").Int() != 4 || gjson.Get(stdout, "codes").Str != "1004,2003" {
		t.Fatalf("--from-env: exit %d %s %s", code, stdout, stderr)
	}
	// A date-only end is midnight at the start of that day: the plan shows
	// the resolved instants and says so.
	_, stderr, code = w.run(nil, "", "replay", "--dlq", w.dlq, "--queue-base-url", w.base, "--window", "2025-11-14/2025-11-15", "--codes", "1004", "--dry-run")
	if code != 0 || !strings.Contains(stderr, "window   2025-11-14T00:00:00.000Z … 2025-11-15T00:00:00.000Z") || !strings.Contains(stderr, "a date alone means midnight UTC at the start of that day") {
		t.Errorf("date-only window: exit %d: %s", code, stderr)
	}
	usage := []struct {
		env  []string
		args []string
		want string
	}{
		{nil, w.replayArgs("--codes", "*", "--window", "2025-11-13T00:00:00Z/2025-11-14T09:00:00Z", "--yes"), "24h"},
		{nil, w.replayArgs("--window", winEnd+"/"+winStart, "--yes"), "start before it ends"},
		{nil, w.replayArgs(), "needs --yes"},
		{nil, w.replayArgs("--window", "yesterday/today", "--yes"), "--window"},
		{nil, w.replayArgs("--codes", "PushFailed", "--yes"), "--codes"},
		{[]string{"PUSH_DLQ_QUEUE_URL=" + w.dlq, "PUSH_QUEUE_BASE_URL=" + w.base, "PROCESS_START_AT=14/11/2025", "PROCESS_END_AT=" + winEnd, "PROCESS_ERROR_CODES=1004"},
			[]string{"replay", "--from-env", "--dry-run"}, `PROCESS_START_AT="14/11/2025"`},
	}
	for _, u := range usage {
		_, stderr, code := w.run(u.env, "", u.args...)
		if code != 2 || !strings.Contains(stderr, u.want) {
			t.Errorf("%v: exit %d, want 2 with %q: %s", u.args, code, u.want, stderr)
		}
	}
	// Nothing was touched by the refused runs.
	q, _ := sqsmove.Describe(t.Context(), w.c, w.dlq)
	if q.Visible != 8 {
		t.Errorf("%d visible after refused runs, want 8", q.Visible)
	}
}

func TestReplayNeverTargetsTheDLQ(t *testing.T) {
	t.Parallel()
	endpoint := testsupport.SQSEndpoint(t)
	c := testsupport.SQSClientAt(endpoint)
	prefix := "loop" + testsupport.RandomHex(3) + "-"
	dlq := testsupport.CreateQueue(t, c, prefix+"P1", nil) // the DLQ is named like priority 1's queue
	testsupport.SendBodies(t, c, dlq, []string{fmt.Sprintf(`{"priority":1,"createdAt":%d,"errorCode":1004}`, inWindow)}, nil)
	w := &world{t: t, c: c, endpoint: endpoint, stateDir: t.TempDir()}
	_, stderr, code := w.run(nil, "", "replay", "--dlq", dlq, "--queue-base-url", strings.TrimSuffix(dlq, "P1"), "--window", winStart+"/"+winEnd, "--codes", "1004", "--yes")
	if code != 2 || !strings.Contains(stderr, "the DLQ itself") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	q, _ := sqsmove.Describe(t.Context(), c, dlq)
	if q.Visible != 1 {
		t.Errorf("the message was not released: %+v", q)
	}
}

func TestCodes(t *testing.T) {
	w := &world{t: t}
	stdout, _, code := w.run(nil, "", "codes", "-o", "json")
	if code != 0 || gjson.Get(stdout, "#").Int() != 7 || gjson.Get(stdout, `#(code==2003).name`).Str != "NotificationNotFound" {
		t.Fatalf("codes: %d %s", code, stdout)
	}
}
