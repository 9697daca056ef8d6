package pushdlqcmd

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/deadletter/deadletter/internal/cli/iostreams"
	"github.com/deadletter/deadletter/internal/shellword"
	"github.com/deadletter/deadletter/internal/sqsmove"
	"github.com/deadletter/deadletter/internal/testsupport"
	"github.com/deadletter/deadletter/internal/testsupport/golden"
	"github.com/deadletter/deadletter/internal/triage"
	"github.com/deadletter/deadletter/internal/workflow/pushreplay"
)

// runPushdlq runs pushdlq against the test SQS server.
func runPushdlq(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	ios, _, out, errOut := iostreams.Test()
	f := NewFactory(ios, func(string) string { return "" })
	f.SQS = func(context.Context) (sqsmove.API, string, error) { return testsupport.SQSClient(t), "test SQS", nil }
	code := Run(context.Background(), f, args)
	return code, out.String(), errOut.String()
}

// triageDLQ is a DLQ with two bursts of 1004, NotificationNotFound inside
// the first burst (written late) and on its own a day later (deleted), a
// 2002, a message without error metadata and one that is not JSON.
func triageDLQ(t *testing.T) (c *sqs.Client, dlq, base string, bodies []string) {
	t.Helper()
	c = testsupport.SQSClient(t)
	dlq, base = testsupport.NewPushQueues(t, c, "tr", 1, 2)
	at := func(s string) int64 {
		ts, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return ts.UnixMilli()
	}
	msg := func(created int64, code int, text string) string {
		return `{"action":"push","priority":1,"createdAt":` + strconv.FormatInt(created, 10) + `,"errorCode":` + strconv.Itoa(code) + `,"errorMessage":` + strconv.Quote(text) + `}`
	}
	for i := 0; i < 5; i++ { // burst A of 1004, 08:30 to 08:42
		bodies = append(bodies, msg(at("2025-11-14T08:30:00Z")+int64(i)*3*60_000+int64(i)*1000, 1004, "PushFailed: 2 of 3 endpoints failed for notification n-"+strconv.Itoa(i)))
	}
	for i := 0; i < 3; i++ { // burst B of 1004, a day later
		bodies = append(bodies, msg(at("2025-11-15T10:00:00Z")+int64(i)*60_000, 1004, "PushFailed: 1 of 1 endpoints failed"))
	}
	bodies = append(bodies, msg(at("2025-11-14T08:35:10Z"), 2003, "NotificationNotFound: n-77"), msg(at("2025-11-14T08:36:10Z"), 2003, "NotificationNotFound: n-78"))
	bodies = append(bodies, msg(at("2025-11-17T00:00:00Z"), 2003, "NotificationNotFound: n-1"), msg(at("2025-11-17T00:01:00Z"), 2003, "NotificationNotFound: n-2"))
	bodies = append(bodies, msg(at("2025-11-14T08:31:00Z"), 2002, "PushServiceNotSupported: WNS"))
	bodies = append(bodies, `{"action":"push","priority":2,"createdAt":`+strconv.FormatInt(at("2025-11-14T08:31:00Z"), 10)+`}`, `not json`)
	testsupport.SendBodies(t, c, dlq, bodies, nil)
	return c, dlq, base, bodies
}

// runPushdlqTTY runs pushdlq against the test SQS server with stdout and
// stderr on a terminal of width columns and the environment env (colour:
// NO_COLOR, TERM).
func runPushdlqTTY(t *testing.T, width int, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	ios, _, out, errOut := iostreams.Test()
	ios.SetTTY(false, true, true)
	ios.SetWidth(width)
	ios.SetEnv(func(k string) string { return env[k] })
	f := NewFactory(ios, func(string) string { return "" })
	f.SQS = func(context.Context) (sqsmove.API, string, error) { return testsupport.SQSClient(t), "test SQS", nil }
	code := Run(context.Background(), f, args)
	return code, out.String(), errOut.String()
}

// On a terminal, pushdlq triage opens with a summary (messages by class,
// what to do first) and shows each group as a header row fitted to the
// width, its verdict, and its replay whole on a line of its own: it was
// one line of 300 characters per group, each replay cut by the wrap.
// Colour only where wanted, never shown as text; piped, tab-separated.
func TestPushTriageOnATerminal(t *testing.T) {
	_, dlq, base, _ := triageDLQ(t)
	args := []string{"triage", "--dlq", dlq, "--queue-base-url", base}
	_, out, _ := runPushdlq(t, append(args, "-o", "json")...)
	var rep TriageReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		width int
		env   map[string]string
	}{{80, nil}, {100, nil}, {200, nil}, {100, map[string]string{"NO_COLOR": "1"}}, {100, map[string]string{"TERM": "dumb"}}} {
		width, env := c.width, c.env
		code, screen, stderr := runPushdlqTTY(t, width, env, args...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		what := fmt.Sprintf("%d columns, env %v", width, env)
		if bad := testsupport.LiteralEscapes(screen); len(bad) > 0 {
			t.Errorf("%s: escape sequences shown as text: %v", what, bad)
		}
		if testsupport.HasSGR(screen) != (env == nil) {
			t.Errorf("%s: colour %v, want %v", what, env != nil, env == nil)
		}
		if bad := testsupport.TooWide(screen, width); len(bad) > 0 {
			t.Errorf("%s: lines wider than the terminal: %v", what, bad)
		}
		for _, g := range rep.Groups {
			if g.Command != nil && !testsupport.CommandOnItsOwnLine(screen, *g.Command) {
				t.Errorf("%s: the replay is cut or not on a line of its own: %s\n%s", what, *g.Command, screen)
			}
		}
		if lines := testsupport.ScreenLines(screen); !strings.HasPrefix(lines[0].Plain, "15 messages in 7 groups: 10 transient, 4 permanent, 1 unknown") ||
			!strings.HasPrefix(lines[1].Plain, "first: replay 10 messages (3 bursts)") {
			t.Errorf("%s: no summary first:\n%s", what, screen)
		}
	}
	_, screen, _ := runPushdlqTTY(t, 100, map[string]string{"NO_COLOR": "1"}, args...)
	screen = strings.ReplaceAll(strings.ReplaceAll(screen, dlq, "DLQ"), base, "BASE/")
	golden.Check(t, filepath.Join("testdata", "triage_tty.golden"), screen)

	_, piped, _ := runPushdlq(t, args...)
	if lines := strings.Split(strings.TrimSuffix(piped, "\n"), "\n"); len(lines) != len(rep.Groups) || strings.Count(lines[0], "\t") != 6 || strings.Contains(piped, "\x1b") {
		t.Errorf("piped: want one tab-separated line per group:\n%s", piped)
	}
}

// The identity line names the endpoint SQS really uses: with only
// AWS_ENDPOINT_URL_SQS set it said endpoint=aws while every request went
// to the variable's endpoint.
func TestIdentityLineNamesAWSEndpointURLSQS(t *testing.T) {
	endpoint := testsupport.SQSEndpoint(t)
	_, dlq, _, _ := triageDLQ(t)
	testsupport.SetAWSEnv(t, map[string]string{"AWS_ENDPOINT_URL_SQS": endpoint, "AWS_ENDPOINT_URL": ""})
	for _, verb := range [][]string{{"triage", "--dlq", dlq}, {"inspect", "--dlq", dlq}} {
		ios, _, _, errOut := iostreams.Test()
		code := Run(context.Background(), NewFactory(ios, os.Getenv), verb)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", verb[0], code, errOut)
		}
		if want := "endpoint=" + endpoint + " (AWS_ENDPOINT_URL_SQS)"; !strings.Contains(errOut.String(), want) || strings.Contains(errOut.String(), "endpoint=aws") {
			t.Errorf("%s: the identity line does not say %q:\n%s", verb[0], want, errOut)
		}
	}
}

// A DLQ with two bursts of 1004, NotificationNotFound inside the first
// burst (written late) and on its own a day later (deleted), a 2002, a
// message without error metadata and one that is not JSON: each group gets
// its verdict, and each printed replay, run as printed, selects exactly its
// burst's messages.
func TestPushTriageReplayCommandSelectsExactlyItsBurst(t *testing.T) {
	c, dlq, base, bodies := triageDLQ(t)
	code, out, stderr := runPushdlq(t, "triage", "--dlq", dlq, "--queue-base-url", base, "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep TriageReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	type want struct {
		class   triage.Class
		count   int
		command bool
	}
	wants := map[string]want{
		"1004 2025-11-14T08:30:00Z": {triage.Transient, 5, true},
		"1004 2025-11-15T10:00:00Z": {triage.Transient, 3, true},
		"2003 2025-11-14T08:35:00Z": {triage.Transient, 2, true},  // written late, in 1004's burst
		"2003 2025-11-17T00:00:00Z": {triage.Permanent, 2, false}, // alone: deleted
		"2002 2025-11-14T08:31:00Z": {triage.Permanent, 1, false},
		"- 2025-11-14T08:31:00Z":    {triage.Unknown, 1, false},
		"- body_not_json":           {triage.Permanent, 1, false},
	}
	if rep.Scanned != len(bodies) || len(rep.Groups) != len(wants) {
		t.Fatalf("%d scanned in %d groups: %s", rep.Scanned, len(rep.Groups), out)
	}
	for _, g := range rep.Groups {
		key := "-"
		if g.Code != nil {
			key = strconv.Itoa(*g.Code)
		}
		if g.FirstCreatedAt != nil {
			key += " " + strings.Replace(*g.FirstCreatedAt, ".000Z", "Z", 1)
		} else {
			key += " " + string(g.Problem)
		}
		w, ok := wants[key]
		if !ok || g.Class != w.class || g.Count != w.count || (g.Command != nil) != w.command {
			t.Errorf("group %s: %s, %d, command %v; want %+v", key, g.Class, g.Count, g.Command != nil, w)
			continue
		}
		if g.Command == nil {
			continue
		}
		words, err := shellword.Split(*g.Command)
		if err != nil || words[0] != "pushdlq" {
			t.Fatalf("%q: %v", *g.Command, err)
		}
		code, out, stderr := runPushdlq(t, append(words[1:], "-o", "json")...)
		if code != 0 && code != 3 {
			t.Fatalf("%s: exit %d: %s", *g.Command, code, stderr)
		}
		var sum pushreplay.Summary
		if err := json.Unmarshal([]byte(out), &sum); err != nil {
			t.Fatalf("%s -o json: %v\n%s", *g.Command, err, out)
		}
		if sum.Eligible != g.Count || sum.Scanned != len(bodies) {
			t.Errorf("%s\nselects %d of %d scanned, the burst has %d\n%s", *g.Command, sum.Eligible, sum.Scanned, g.Count, out)
		}
	}
	if !testsupport.QueueEmpty(t, c, base+"P1") {
		t.Error("a dry run sent something")
	}

	// inspect --html opens with the same triage.
	page := filepath.Join(t.TempDir(), "dlq.html")
	if code, _, stderr := runPushdlq(t, "inspect", "--dlq", dlq, "--all", "--html", page); code != 0 {
		t.Fatalf("inspect: exit %d: %s", code, stderr)
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	text := html.UnescapeString(string(b))
	if h2 := strings.Index(text, "<h2"); h2 < 0 || !strings.HasPrefix(text[h2:], "<h2") || !strings.Contains(text[h2:h2+200], "Triage: what to do with each group") {
		t.Errorf("the inspect page does not open with the triage")
	}
	for _, want := range []string{"--window 2025-11-14T08:30:00Z/2025-11-14T08:43:00Z --codes 1004 --dry-run", "2003 NotificationNotFound in 2025-11-17T00:00:00Z/2025-11-17T00:02:00Z"} {
		if !strings.Contains(text, want) {
			t.Errorf("the inspect page's triage lacks %q", want)
		}
	}
}

// Issue 38 item 2: the "first:" line named the replayable bursts while a
// larger permanent group was printed above them. The groups are now shown
// in the advice's order: replay, look, never.
func TestPushTriageGroupsAreShownInTheAdvicesOrder(t *testing.T) {
	cmd := "pushdlq replay --window W --codes 1004 --dry-run"
	rep := TriageReport{Groups: []TriageGroup{
		{Name: "permanent", Class: triage.Permanent, Count: 50},
		{Name: "unknown", Class: triage.Unknown, Count: 20},
		{Name: "replayable", Class: triage.Transient, Count: 5, Command: &cmd},
	}}
	v := triageView(rep)
	var order []int
	for _, g := range v.Groups {
		order = append(order, g.Count)
	}
	if !slices.Equal(order, []int{5, 20, 50}) {
		t.Errorf("groups shown in the order %v, want replay (5), look (20), never (50)", order)
	}
	if len(v.Steps) == 0 || !strings.HasPrefix(v.Steps[0], "replay 5 messages") {
		t.Errorf("steps %q", v.Steps)
	}
}
