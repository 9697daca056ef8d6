package pushdlqcmd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/audit"
	"github.com/deadletter/deadletter/internal/cli/iostreams"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// auditWorld is a push DLQ with priority queues P1 and P2 on fauxqs, the
// state directory of its runs, and the bodies seeded: notification n-I's
// message I, eligible (code 1004, in the window) unless I%4 == 3 (code
// 1001, not selected).
type auditWorld struct {
	t        *testing.T
	c        *sqs.Client
	endpoint string
	dlq      string
	base     string
	state    string
	bodies   []string
	ids      []string
}

const auditWindow = "2025-11-14/2025-11-15"

func newAuditWorld(t *testing.T, n int) *auditWorld {
	t.Helper()
	w := &auditWorld{t: t, endpoint: testsupport.SQSEndpoint(t), state: t.TempDir()}
	w.c = testsupport.SQSClientAt(w.endpoint)
	w.dlq, w.base = testsupport.NewPushQueues(t, w.c, "au", 1, 2)
	for i := range n {
		code := 1004
		if i%4 == 3 {
			code = 1001
		}
		w.bodies = append(w.bodies, fmt.Sprintf(`{"action":"push","notificationId":"n-%d","priority":%d,"createdAt":%d,"errorCode":%d}`, i, 1+i%2, 1763109060000+int64(i), code))
	}
	w.ids = testsupport.SendBodies(t, w.c, w.dlq, w.bodies, nil)
	return w
}

func eligibleBody(b string) bool { return gjson.Get(b, "errorCode").Int() == 1004 }

// cli runs pushdlq in process with the world's state directory.
func (w *auditWorld) cli(args ...string) (code int, stdout, stderr string) {
	w.t.Helper()
	ios, _, out, errOut := iostreams.Test()
	f := NewFactory(ios, os.Getenv)
	f.StateDir = func() (string, error) { return w.state, nil }
	code = Run(context.Background(), f, args)
	return code, out.String(), errOut.String()
}

// replay runs pushdlq replay of the world's DLQ with extra flags.
func (w *auditWorld) replay(extra ...string) (code int, stdout, stderr string) {
	w.t.Helper()
	return w.cli(append([]string{"replay", "--dlq", w.dlq, "--queue-base-url", w.base, "--endpoint-url", w.endpoint,
		"--window", auditWindow, "--codes", "1004", "--yes"}, extra...)...)
}

// localStore is the world's local audit directory as a store, created.
func (w *auditWorld) localStore() archive.Store {
	w.t.Helper()
	dir := filepath.Join(w.state, "audit")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		w.t.Fatal(err)
	}
	st, err := archive.NewLocal(dir)
	if err != nil {
		w.t.Fatal(err)
	}
	return st
}

// where drains the DLQ and the targets: for each body, the queues it is in.
func (w *auditWorld) where() map[string][]string {
	w.t.Helper()
	got := map[string][]string{}
	for name, q := range map[string]string{"DLQ": w.dlq, "P1": w.base + "P1", "P2": w.base + "P2"} {
		for _, m := range testsupport.Drain(w.t, w.c, q, 2*time.Second) {
			got[aws.ToString(m.Body)] = append(got[aws.ToString(m.Body)], name)
		}
	}
	return got
}

// localRuns reads the runs recorded in the world's local audit directory,
// items loaded.
func (w *auditWorld) localRuns() []audit.Run {
	w.t.Helper()
	dir := filepath.Join(w.state, "audit")
	if _, err := os.Stat(dir); os.IsNotExist(err) {
		return nil
	}
	st, err := archive.NewLocal(dir)
	if err != nil {
		w.t.Fatal(err)
	}
	return loadRuns(w.t, st, "")
}

func loadRuns(t *testing.T, st archive.Store, base string) []audit.Run {
	t.Helper()
	runs, problems, err := audit.List(context.Background(), st, base, audit.Filter{})
	if err != nil || len(problems) > 0 {
		t.Fatalf("list the records: %v %v", err, problems)
	}
	for i := range runs {
		if err := runs[i].LoadItems(context.Background(), st); err != nil {
			t.Fatal(err)
		}
	}
	return runs
}

// The record of a replay: the actor (STS answered by a local responder),
// the reason, the target queues, the plan's and the outcome's counts, one
// item per message with its notification id and what became of it; the
// plan says where it went and that it is not shared. No credential of the
// run is in it.
func TestReplayLeavesAnAuditRecordOfEveryMessageWithActorReasonAndCounts(t *testing.T) {
	testsupport.SetAWSEnv(t, map[string]string{"AWS_SESSION_TOKEN": "session-token-must-not-be-recorded"})
	testsupport.STSResponder(t, "arn:aws:sts::123456789012:assumed-role/ops-oncall/alice", "123456789012")
	w := newAuditWorld(t, 12)
	code, stdout, stderr := w.replay("--reason", "INC-4411", "--ineligible", "park", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "audit: "+filepath.Join(w.state, "audit")+" (local: not shared with other operators; --audit s3://… shares it)") {
		t.Errorf("the plan does not say where the record goes:\n%s", stderr)
	}
	runs := w.localRuns()
	if len(runs) != 1 {
		t.Fatalf("%d runs recorded, want 1", len(runs))
	}
	r := runs[0]
	if r.Tool != "pushdlq" || r.Verb != "replay" || r.Reason != "INC-4411" || r.Finished == nil || r.Finished.ExitCode != 0 {
		t.Errorf("record: tool %q verb %q reason %q finished %+v", r.Tool, r.Verb, r.Reason, r.Finished)
	}
	if r.Actor.AWSARN == nil || *r.Actor.AWSARN != "arn:aws:sts::123456789012:assumed-role/ops-oncall/alice" || r.Actor.OSUser == "" || r.Actor.Host == "" {
		t.Errorf("actor %+v", r.Actor)
	}
	if r.Target.DLQ != w.dlq || strings.Join(r.Target.Queues, " ") != w.base+"P1 "+w.base+"P2" {
		t.Errorf("target %+v, want the DLQ and %sP1, P2", r.Target, w.base)
	}
	if r.Plan["eligible"] != 9 || r.Plan["ineligible"] != 3 || r.Plan["scanned"] != 12 {
		t.Errorf("plan counts %v, want 12 scanned, 9 eligible, 3 ineligible", r.Plan)
	}
	if c := r.Finished.Counts; c["replayed"] != 9 || c["parked"] != 3 || c["held_back"] != 0 {
		t.Errorf("counts %v, want 9 replayed, 3 parked", c)
	}
	if r.Finished.Items != 12 || len(r.Items) != 12 {
		t.Errorf("%d items recorded (%d read), want 12", r.Finished.Items, len(r.Items))
	}
	byID := map[string]audit.Item{}
	for _, it := range r.Items {
		byID[it.MessageID] = it
	}
	for i, id := range w.ids {
		it, ok := byID[id]
		want, queue := "replayed", fmt.Sprintf("%sP%d", w.base, 1+i%2)
		if !eligibleBody(w.bodies[i]) {
			want, queue = "parked", w.dlq
		}
		if !ok || it.Action != want || it.NotificationID != fmt.Sprint("n-", i) || it.Queue != queue {
			t.Errorf("message %d: item %+v, want %s to %s with notification n-%d", i, it, want, queue, i)
		}
	}
	where := w.where()
	for _, b := range testsupport.DelayedBodies(t, w.dlq) { // the parked ones
		where[b] = append(where[b], "DLQ")
	}
	for i, b := range w.bodies {
		want := fmt.Sprintf("P%d", 1+i%2)
		if !eligibleBody(b) {
			want = "DLQ"
		}
		if got := where[b]; len(got) != 1 || got[0] != want {
			t.Errorf("%s is in %v, want %s", b, got, want)
		}
	}
	assertNoSecretInRecords(t, filepath.Join(w.state, "audit"), "session-token-must-not-be-recorded", testsupport.SecretKey)
}

// assertNoSecretInRecords fails when any file under dir holds a secret.
func assertNoSecretInRecords(t *testing.T, dir string, secrets ...string) {
	t.Helper()
	n := 0
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		n++
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, s := range secrets {
			if strings.Contains(string(b), s) {
				t.Errorf("%s holds the secret %q:\n%s", p, s, b)
			}
		}
		return nil
	})
	if err != nil || n == 0 {
		t.Fatalf("read the records under %s: %v (%d files)", dir, err, n)
	}
}

// seedReplays writes, under base of st, one finished replay record per
// entry of times, each replaying the notifications it names.
func seedReplays(t *testing.T, st archive.Store, base string, runs ...[]string) {
	t.Helper()
	at := time.Now().UTC().Add(-10 * 24 * time.Hour)
	for i, notes := range runs {
		reason := fmt.Sprint("INC-", i)
		if i == 1 {
			reason = ""
		}
		arn, account := "arn:aws:sts::123456789012:assumed-role/ops-oncall/alice", "123456789012"
		rec, err := audit.Begin(context.Background(), st, base, audit.Started{Tool: "pushdlq", Verb: "replay", Reason: reason,
			Actor:     audit.Actor{AWSARN: &arn, AWSAccount: &account, OSUser: "alice", Host: "bastion"},
			StartedAt: at.Add(time.Duration(i) * 24 * time.Hour)}, audit.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for j, n := range notes {
			rec.Add(audit.Item{MessageID: fmt.Sprintf("old-%d-%d", i, j), NotificationID: n, Action: "replayed"})
		}
		if err := rec.Finish(context.Background(), audit.Finished{Counts: map[string]int{"replayed": len(notes)}}); err != nil {
			t.Fatal(err)
		}
	}
}

// The replay guard holds back exactly the notifications the audit shows
// replayed --max-replays times already: they stay in the DLQ (released),
// the plan says how many, the summary names them with their counts, and
// the record lists them held_back; the rest are sent. A dry run writes no
// record; --no-audit writes none and its plan says so.
func TestReplayGuardHoldsBackExactlyTheNotificationsAtTheirLimit(t *testing.T) {
	testsupport.SetAWSEnv(t, nil)
	w := newAuditWorld(t, 8) // eligible: n-0, n-1, n-2, n-4, n-5, n-6
	st := w.localStore()
	// n-0 three times, n-1 twice, n-3 (not eligible) three times, n-4 four
	// times (one run recording it twice counts once: five items, four runs).
	seedReplays(t, st, "", []string{"n-0", "n-1", "n-3", "n-4", "n-4"}, []string{"n-0", "n-1", "n-3", "n-4"}, []string{"n-0", "n-3", "n-4"}, []string{"n-4"})

	code, stdout, stderr := w.replay("--dry-run", "-o", "json")
	if code != 0 || !strings.Contains(stderr, "held back 2: their notification was replayed 3 times or more already (--max-replays 3)") {
		t.Fatalf("dry run: exit %d, the plan does not say 2 held back:\n%s", code, stderr)
	}
	if gjson.Get(stdout, "held_back").Int() != 2 || gjson.Get(stdout, "eligible").Int() != 4 || gjson.Get(stdout, "ineligible").Int() != 2 {
		t.Errorf("dry run summary: %s", stdout)
	}
	if n := len(w.localRuns()); n != 4 {
		t.Errorf("a dry run left a record: %d runs, want the 4 seeded", n)
	}

	code, stdout, stderr = w.replay("-o", "json", "--reason", "INC-9")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	if gjson.Get(stdout, "held_back").Int() != 2 || gjson.Get(stdout, "sent").Int() != 4 || gjson.Get(stdout, "ineligible").Int() != 2 {
		t.Errorf("summary: want 2 held back, 4 sent, 2 ineligible: %s", stdout)
	}
	var names []string
	for _, h := range gjson.Get(stdout, "held_back_notifications").Array() {
		names = append(names, fmt.Sprintf("%s:%d:%d", h.Get("notification_id").String(), h.Get("replays").Int(), h.Get("messages").Int()))
	}
	if strings.Join(names, " ") != "n-0:3:1 n-4:4:1" {
		t.Errorf("held back notifications %v, want n-0 (3 replays) and n-4 (4)", names)
	}
	runs := w.localRuns()
	if len(runs) != 5 {
		t.Fatalf("%d runs, want 5", len(runs))
	}
	actions := map[string]string{}
	for _, it := range runs[0].Items {
		actions[it.NotificationID] = it.Action + "/" + it.Result
	}
	want := map[string]string{"n-0": "held_back/released", "n-4": "held_back/released", "n-1": "replayed/", "n-2": "replayed/",
		"n-5": "replayed/", "n-6": "replayed/", "n-3": "released/code_not_selected", "n-7": "released/code_not_selected"}
	for n, a := range want {
		if actions[n] != a {
			t.Errorf("%s: %q, want %q (all %v)", n, actions[n], a, actions)
		}
	}
	where := w.where()
	for i, b := range w.bodies {
		dest := fmt.Sprintf("P%d", 1+i%2)
		if !eligibleBody(b) || i == 0 || i == 4 {
			dest = "DLQ"
		}
		if got := where[b]; len(got) != 1 || got[0] != dest {
			t.Errorf("%s is in %v, want %s", b, got, dest)
		}
	}

	// Without the guard's limit and without a record: everything is sent.
	testsupport.SendBodies(t, w.c, w.dlq, []string{w.bodies[0]}, nil)
	code, stdout, stderr = w.replay("--no-audit", "--max-replays", "0", "-o", "json")
	if code != 0 || gjson.Get(stdout, "sent").Int() != 1 || !strings.Contains(stderr, "audit: none (--no-audit)") {
		t.Errorf("--no-audit --max-replays 0: exit %d, %s\n%s", code, stdout, stderr)
	}
	if n := len(w.localRuns()); n != 5 {
		t.Errorf("--no-audit left a record: %d runs, want 5", n)
	}
}

// An audit location that cannot be written (its bucket does not exist)
// moves nothing: the guard cannot read it and refuses before the DLQ is
// read; with --max-replays 0 the record cannot be begun and the run
// refuses before its first send. One line, exit 1, every message still
// in the DLQ.
func TestReplayWithAnUnwritableAuditMovesNothing(t *testing.T) {
	testsupport.SetAWSEnv(t, map[string]string{"AWS_ENDPOINT_URL_S3": testsupport.S3Endpoint(t)})
	w := newAuditWorld(t, 6)
	for _, c := range []struct {
		extra []string
		want  string
	}{
		{nil, "the replay guard cannot read the audit records at s3://no-such-bucket-" + "x/runs/"},
		{[]string{"--max-replays", "0"}, "the audit record cannot be written to s3://no-such-bucket-x/runs/"},
	} {
		code, stdout, stderr := w.replay(append([]string{"--audit", "s3://no-such-bucket-x/runs"}, c.extra...)...)
		t.Logf("%v: exit %d\n%s", c.extra, code, stderr)
		if code != 1 {
			t.Errorf("%v: exit %d, want 1", c.extra, code)
		}
		var lines []string
		for _, l := range strings.Split(stderr, "\n") {
			if strings.HasPrefix(l, "pushdlq: ") {
				lines = append(lines, l)
			}
		}
		if len(lines) != 1 || !strings.Contains(lines[0], c.want) || !strings.Contains(lines[0], "nothing was") {
			t.Errorf("%v: want one line saying %q and that nothing changed, got %q", c.extra, c.want, lines)
		}
		if stdout != "" {
			t.Errorf("%v: a summary was printed: %s", c.extra, stdout)
		}
	}
	where := w.where()
	for _, b := range w.bodies {
		if got := where[b]; len(got) != 1 || got[0] != "DLQ" {
			t.Errorf("%s is in %v, want the DLQ only", b, got)
		}
	}
}

// Two replays at once, each of its own DLQ, keeping their records in one
// S3 prefix: two records, each with its own items.
func TestTwoConcurrentReplaysLeaveTwoRecordsInS3(t *testing.T) {
	s3 := testsupport.S3Endpoint(t)
	testsupport.SetAWSEnv(t, map[string]string{"AWS_ENDPOINT_URL_S3": s3})
	bucket := testsupport.NewBucket(t, testsupport.S3ClientAt(s3))
	worlds := []*auditWorld{newAuditWorld(t, 8), newAuditWorld(t, 12)}
	var wg sync.WaitGroup
	codes := make([]int, 2)
	errs := make([]string, 2)
	for i, w := range worlds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i], _, errs[i] = w.replay("--audit", "s3://"+bucket+"/ops/audit", "--reason", fmt.Sprint("run-", i))
		}()
	}
	wg.Wait()
	for i := range worlds {
		if codes[i] != 0 {
			t.Fatalf("run %d: exit %d\n%s", i, codes[i], errs[i])
		}
		if !strings.Contains(errs[i], "audit: s3://"+bucket+"/ops/audit/") {
			t.Errorf("run %d: the plan does not name the record's place:\n%s", i, errs[i])
		}
	}
	runs := loadRuns(t, archive.NewS3(testsupport.S3ClientAt(s3), bucket), "ops/audit/")
	if len(runs) != 2 {
		t.Fatalf("%d records, want 2", len(runs))
	}
	sort.Slice(runs, func(i, j int) bool { return runs[i].Reason < runs[j].Reason })
	for i, r := range runs {
		if r.Reason != fmt.Sprint("run-", i) || r.Finished == nil || len(r.Items) != len(worlds[i].bodies) || r.Target.DLQ != worlds[i].dlq {
			t.Errorf("record %d: reason %q, finished %v, %d items (want %d), DLQ %s", i, r.Reason, r.Finished != nil, len(r.Items), len(worlds[i].bodies), r.Target.DLQ)
		}
	}
}

// A replay from an export file leaves its record too: the file in the
// selection, no DLQ, one item per line of the file with its notification.
func TestReplayFromFileLeavesARecordOfEachLine(t *testing.T) {
	testsupport.SetAWSEnv(t, nil)
	w := newAuditWorld(t, 0)
	file := filepath.Join(t.TempDir(), "dlq.ndjson")
	var lines []string
	for i := range 4 {
		code := 1004
		if i == 3 {
			code = 1001
		}
		body := fmt.Sprintf(`{\"notificationId\":\"f-%d\",\"priority\":1,\"createdAt\":1763109060000,\"errorCode\":%d}`, i, code)
		lines = append(lines, fmt.Sprintf(`{"message_id":"m%d","body":"%s","message_attributes":{},"attributes":{}}`, i, body))
	}
	if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := w.cli("replay", "--from-file", file, "--queue-base-url", w.base, "--endpoint-url", w.endpoint,
		"--window", auditWindow, "--codes", "1004", "--yes", "--reason", "from a file")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	runs := w.localRuns()
	if len(runs) != 1 {
		t.Fatalf("%d records, want 1", len(runs))
	}
	r := runs[0]
	if r.Selection["from_file"] != file || r.Target.DLQ != "" || r.Finished == nil || r.Finished.Counts["replayed"] != 3 {
		t.Errorf("record: selection %v target %+v finished %+v", r.Selection, r.Target, r.Finished)
	}
	got := map[string]string{}
	for _, it := range r.Items {
		got[it.MessageID] = it.NotificationID + ":" + it.Action
	}
	want := map[string]string{"m0": "f-0:replayed", "m1": "f-1:replayed", "m2": "f-2:replayed", "m3": "f-3:released"}
	for id, v := range want {
		if got[id] != v {
			t.Errorf("%s: %q, want %q (all %v)", id, got[id], v, got)
		}
	}
}
