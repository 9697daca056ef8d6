package pushdlqcmd

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/cli/iostreams"
	"github.com/deadletter/deadletter/internal/pushpolicy"
	"github.com/deadletter/deadletter/internal/sqsmove"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// sinceNow is the clock of the --since tests.
var sinceNow = time.Date(2025, 11, 14, 9, 0, 0, 0, time.UTC)

// runPushdlqAt runs pushdlq against the test SQS server at the clock now.
func runPushdlqAt(t *testing.T, now time.Time, args ...string) (int, string, string) {
	t.Helper()
	ios, _, out, errOut := iostreams.Test()
	f := NewFactory(ios, func(string) string { return "" })
	f.Now = func() time.Time { return now }
	f.SQS = func(context.Context) (sqsmove.API, string, error) { return testsupport.SQSClient(t), "test SQS", nil }
	code := Run(context.Background(), f, args)
	return code, out.String(), errOut.String()
}

// replay --since 30m is --window now−30m/now: the plan prints the window
// it resolved to as absolute UTC times, and only the messages created in
// it are eligible.
func TestReplaySinceIsTheWindowEndingNow(t *testing.T) {
	c := testsupport.SQSClient(t)
	dlq, base := testsupport.NewPushQueues(t, c, "since", 1)
	var bodies []string
	for _, ago := range []time.Duration{5 * time.Minute, 29 * time.Minute, 31 * time.Minute, 2 * time.Hour} {
		created := sinceNow.Add(-ago).UnixMilli()
		bodies = append(bodies, `{"action":"push","priority":1,"createdAt":`+strconv.FormatInt(created, 10)+`,"errorCode":1004}`)
	}
	testsupport.SendBodies(t, c, dlq, bodies, nil)
	code, _, stderr := runPushdlqAt(t, sinceNow, "replay", "--dlq", dlq, "--queue-base-url", base, "--since", "30m", "--codes", "1004", "--dry-run", "--visibility-timeout", "30s")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		"  window   2025-11-14T08:30:00.000Z … 2025-11-14T09:00:00.000Z\n",
		"           since 30m: 2025-11-14T08:30:00Z/2025-11-14T09:00:00Z (now minus 30m to now)\n",
		"  eligible 2\n",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("plan lacks %q:\n%s", want, stderr)
		}
	}
}

// The command that resumes a --since run names the window it resolved to,
// not the span: run later, the span would select other messages.
func TestReplaySinceResumesWithTheResolvedWindow(t *testing.T) {
	ios, _, _, _ := iostreams.Test()
	f := NewFactory(ios, func(string) string { return "" })
	f.Now = func() time.Time { return sinceNow.Add(123 * time.Millisecond) }
	var got *ReplayOptions
	cmd := newCmdReplay(f, func(_ context.Context, o *ReplayOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"--dlq", "q", "--queue-base-url", "b", "--since", "1d12h", "--codes", "1004", "--dry-run"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	resume := resumeCommand(got, "j.ndjson", 0)
	if want := "--window 2025-11-12T21:00:00.123Z/2025-11-14T09:00:00.123Z"; !strings.Contains(resume, want) || strings.Contains(resume, "--since") {
		t.Errorf("resume command %q, want %q in it and no --since", resume, want)
	}
	s, e, err := pushpolicy.ParseWindow(got.Window)
	if err != nil || s != got.Policy.Start || e != got.Policy.End || e != sinceNow.Add(123*time.Millisecond).UnixMilli() || e-s != 36*3600_000 {
		t.Errorf("window %q: policy %d…%d (%v), want the 36 hours to now", got.Window, got.Policy.Start, got.Policy.End, err)
	}
}

// --since with --window is refused in one line naming both, and a span
// that is not one in the tool's words, before SQS is touched.
func TestReplaySinceRefusesWindowAndBadSpans(t *testing.T) {
	base := []string{"replay", "--dlq", "q", "--queue-base-url", "b", "--codes", "1004", "--dry-run"}
	for args, want := range map[string]string{
		"--since 6h --window 2025-11-14/2025-11-15": "pushdlq: --since cannot be combined with --window",
		"--since abc": `pushdlq: --since: "abc" is not a duration (e.g. 30m, 6h, 2d)`,
	} {
		ios, _, _, errOut := iostreams.Test()
		f := NewFactory(ios, func(string) string { return "" })
		f.SQS = func(context.Context) (sqsmove.API, string, error) {
			t.Errorf("%s: SQS was used", args)
			return nil, "", context.Canceled
		}
		if code := Run(context.Background(), f, append(base, strings.Fields(args)...)); code != 2 || !strings.Contains(errOut.String(), want) {
			t.Errorf("%s: exit %d, want 2 with %q: %s", args, code, want, errOut.String())
		}
	}
}

// inspect --since 30m summarises only the messages read that were created
// in the window ending now, says the window as absolute UTC times, and
// counts the others read (earlier, or not dated) apart.
func TestInspectSinceCountsOnlyTheWindow(t *testing.T) {
	c := testsupport.SQSClient(t)
	dlq, _ := testsupport.NewPushQueues(t, c, "isince", 1)
	var bodies []string
	for _, m := range []struct {
		ago  time.Duration
		code int
	}{{5 * time.Minute, 1004}, {29 * time.Minute, 2003}, {31 * time.Minute, 1004}, {2 * time.Hour, 1004}} {
		created := sinceNow.Add(-m.ago).UnixMilli()
		bodies = append(bodies, `{"action":"push","priority":1,"createdAt":`+strconv.FormatInt(created, 10)+`,"errorCode":`+strconv.Itoa(m.code)+`}`)
	}
	testsupport.SendBodies(t, c, dlq, append(bodies, "not json"), nil)
	code, out, stderr := runPushdlqAt(t, sinceNow, "inspect", "--dlq", dlq, "--all", "--since", "30m")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		"Since       30m: 2025-11-14T08:30:00Z/2025-11-14T09:00:00Z (on createdAt)\n",
		"Scanned     5 messages (all): 2 created in that window, counted below;\n",
		"            3 outside it (created before or after it, or undated) left out\n",
		"createdAt   2025-11-14T08:31:00.000Z … 2025-11-14T08:55:00.000Z\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "Malformed") {
		t.Errorf("the undated body was counted:\n%s", out)
	}
	code, out, stderr = runPushdlqAt(t, sinceNow, "inspect", "--dlq", dlq, "--all", "--since", "30m", "-o", "json")
	var rep InspectReport
	if err := json.Unmarshal([]byte(out), &rep); code != 0 || err != nil {
		t.Fatalf("exit %d, %v: %s", code, err, stderr)
	}
	if rep.Since == nil || *rep.Since != "2025-11-14T08:30:00Z/2025-11-14T09:00:00Z" || rep.OutsideSince != 3 || rep.Scanned != 2 || len(rep.ByCode) != 2 {
		t.Errorf("json: since %v, outside %d, scanned %d, by code %v", rep.Since, rep.OutsideSince, rep.Scanned, rep.ByCode)
	}
	page := filepath.Join(t.TempDir(), "inspect.html")
	if code, _, stderr := runPushdlqAt(t, sinceNow, "inspect", "--dlq", dlq, "--all", "--since", "30m", "--html", page); code != 0 {
		t.Fatalf("--html: exit %d: %s", code, stderr)
	}
	b, err := os.ReadFile(page)
	if want := "read 5 messages (every message)"; err != nil || !strings.Contains(string(b), want) ||
		!strings.Contains(string(b), "Counted: the 2 created since 30m, 2025-11-14T08:30:00Z/2025-11-14T09:00:00Z (UTC); 3 outside it") {
		t.Errorf("the page does not say the window (%v):\n%s", err, b)
	}
	if code, _, stderr := runPushdlqAt(t, sinceNow, "inspect", "--dlq", dlq, "--since", "6y"); code != 2 || !strings.Contains(stderr, `--since: "6y" is not a duration (e.g. 30m, 6h, 2d)`) {
		t.Errorf("--since 6y: exit %d: %s", code, stderr)
	}
}
