package pushdlqcmd

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/deadletter/deadletter/internal/cli/iostreams"
	"github.com/deadletter/deadletter/internal/pushpolicy"
	"github.com/deadletter/deadletter/internal/sqsmove"
)

// Guardrails are checked before any AWS call: the factory's SQS client
// fails the test if it is asked for.
func TestReplayGuardrailsTouchNothing(t *testing.T) {
	base := []string{"replay", "--dlq", "q", "--queue-base-url", "https://sqs/1/push-"}
	win := []string{"--window", "2025-11-14T08:30:00Z/2025-11-14T09:00:00Z"}
	cases := []struct {
		args []string
		env  map[string]string
		want string
	}{
		{append(append(base, win...), "--codes", "1004"), nil, "needs --yes"},
		{append(base, "--codes", "*", "--window", "2025-11-13T08:00:00Z/2025-11-14T09:00:00Z", "--yes"), nil, "24h or less"},
		{append(base, "--codes", "1004", "--window", "2025-11-14T09:00:00Z/2025-11-14T08:30:00Z", "--yes"), nil, "start before it ends"},
		{append(append(base, win...), "--yes"), nil, "--codes (or --from-env) is required"},
		{append(append(base, win...), "--codes", "1004", "--ineligible", "drop", "--yes"), nil, `--ineligible "drop"`},
		{append(append(base, win...), "--codes", "1004", "--visibility-timeout", "13h", "--yes"), nil, "--visibility-timeout"},
		{[]string{"replay", "--from-env", "--yes"}, map[string]string{"PUSH_DLQ_QUEUE_URL": "q", "PUSH_QUEUE_BASE_URL": "b", "PROCESS_START_AT": "x"}, `PROCESS_START_AT="x"`},
		{append(append([]string{"replay", "--from-file", "f", "--queue-base-url", "b"}, win...), "--codes", "1004", "--ineligible", "park", "--yes"), nil, "--ineligible park needs the DLQ"},
		{append(append(base, win...), "--codes", "1004", "--rate", "NaN", "--yes"), nil, "--rate NaN: want"},
		{append(append(base, win...), "--codes", "1004", "--rate", "+Inf", "--yes"), nil, "--rate +Inf: want"},
		{append(append(base, win...), "--codes", "1004", "--rate", "1e-12", "--yes"), nil, "--rate 1e-12: want"},
		{append(append(base, win...), "--codes", "1004", "--rate", "-5", "--yes"), nil, "--rate -5: want"},
		{append(append(base, win...), "--codes", "1004", "--rate", "1e6", "--yes"), nil, "--rate 1e+06: want"},
		{append(append(base, win...), "--codes", "1004", "--journal", "/nonexistent-dir-pushdlq/j.ndjson", "--yes"), nil, "--journal /nonexistent-dir-pushdlq/j.ndjson: its directory"},
		{append(append(base, win...), "--codes", "1004", "--journal", "/", "--yes"), nil, "is a directory; name a file"},
		{[]string{"inspect"}, nil, "--dlq is required"},
		{[]string{"inspect", "--dlq", "q", "--all", "--sample", "3"}, nil, "mutually exclusive"},
		{[]string{"export", "--dlq", "q", "--out", "-", "--delete", "--yes"}, nil, "--delete needs --out FILE"},
		{append(append(base, win...), "--codes", "*,1004", "--yes"), nil, `"*" means all codes and cannot be combined with others`},
		{[]string{"replay", "--from-env", "--yes"}, map[string]string{"PUSH_DLQ_QUEUE_URL": "q", "PUSH_QUEUE_BASE_URL": "b", "PROCESS_START_AT": "2025-11-14T08:30:00Z",
			"PROCESS_END_AT": "2025-11-14T09:00:00Z", "PROCESS_ERROR_CODES": "1004,*"}, `"*" means all codes`},
	}
	for _, tc := range cases {
		ios, _, _, errOut := iostreams.Test()
		f := NewFactory(ios, func(k string) string { return tc.env[k] })
		f.SQS = func(context.Context) (sqsmove.API, string, error) {
			t.Errorf("%v: SQS was used before the guardrails passed", tc.args)
			return nil, "", context.Canceled
		}
		if code := Run(context.Background(), f, tc.args); code != 2 || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("%v: exit %d, want 2 with %q; stderr: %s", tc.args, code, tc.want, errOut.String())
		}
	}
}

func TestInspectSuggestsTheMainBurst(t *testing.T) {
	tl := newTally()
	add := func(body string) { tl.add(pushpolicy.ParseCommand(body)) }
	// 1004: a burst 08:31-08:52 (with a 10-minute gap inside) and two
	// stragglers a day earlier; 2003: fewer.
	for _, ms := range []int64{1763109060000, 1763109120000, 1763109720000, 1763110320000, 1763110320500} {
		add(`{"priority":1,"createdAt":` + itoa(ms) + `,"errorCode":1004}`)
	}
	for _, ms := range []int64{1763022660000, 1763022720000} {
		add(`{"priority":1,"createdAt":` + itoa(ms) + `,"errorCode":1004}`)
	}
	add(`{"priority":2,"createdAt":1763109060000,"errorCode":2003}`)
	add(`not json`)
	add(`{"priority":2,"createdAt":1763109060000}`)
	rep := inspectReport(sqsmove.Queue{URL: "https://sqs/1/push-dlq", Visible: 10}, tl, false)
	s := rep.Suggestion
	if s == nil || s.Code != 1004 || s.Count != 7 || s.InWindow != 5 || s.Window != "2025-11-14T08:31:00Z/2025-11-14T08:53:00Z" {
		t.Fatalf("suggestion %+v", s)
	}
	if rep.NoErrorMetadata != 1 || len(rep.Malformed) != 1 || rep.Malformed[0].Key != "body_not_json" || rep.Scanned != 10 {
		t.Errorf("report %+v", rep)
	}
	var b strings.Builder
	if err := printInspect(&b, rep, nil); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Scanned     10 messages (all)", "1004                   PushFailed", "Suggested:  --window 2025-11-14T08:31:00Z/2025-11-14T08:53:00Z --codes 1004", "2025-11-13T08:00Z"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// An error code that is not in the table is most likely a typo: say so,
// naming the known ones, before anything is read.
func TestUnknownCodeWarns(t *testing.T) {
	ios, _, _, errOut := iostreams.Test()
	f := NewFactory(ios, func(string) string { return "" })
	f.SQS = func(context.Context) (sqsmove.API, string, error) { return nil, "", context.Canceled }
	Run(context.Background(), f, []string{"replay", "--dlq", "q", "--queue-base-url", "b", "--window", "2025-11-14/2025-11-15", "--codes", "1004,99999"})
	want := "warning: error code 99999: not in the push error code table (known: 1001 PublishFailed, 1004 PushFailed, 2001 ProcessRecordFailed,"
	if !strings.Contains(errOut.String(), want) || strings.Contains(errOut.String(), "code 1004:") {
		t.Errorf("stderr lacks %q:\n%s", want, errOut.String())
	}
}

// pushdlq's help speaks of queues and messages, not of dla's archive.
func TestHelpIsPushdlqs(t *testing.T) {
	ios, _, out, _ := iostreams.Test()
	f := NewFactory(ios, func(string) string { return "" })
	if code := Run(context.Background(), f, []string{"help", "exit-codes"}); code != 0 {
		t.Fatalf("exit %d", code)
	}
	text := out.String()
	for _, bad := range []string{"archive", "JSON"} {
		if strings.Contains(text, bad) {
			t.Errorf("exit-codes help mentions %q:\n%s", bad, text)
		}
	}
	for _, want := range []string{"uncertain", "in flight", "stdout was closed", "target queue"} {
		if !strings.Contains(text, want) {
			t.Errorf("exit-codes help lacks %q:\n%s", want, text)
		}
	}
	out.Reset()
	Run(context.Background(), f, []string{"replay", "--help"})
	if u := NewCmdRoot(f).PersistentFlags().Lookup("endpoint-url").Usage; strings.Contains(u, "S3") || !strings.Contains(u, "local SQS") {
		t.Errorf("--endpoint-url: %q", u)
	}
	if !strings.Contains(out.String(), "a date alone is midnight UTC at the start of that day") {
		t.Errorf("replay --help does not say what a date-only window end means:\n%s", out.String())
	}
}

// Issue 38 item 9: inspect's hourly chart listed only the hours holding
// messages, so a day between two bursts was left out without a word. The
// hours between are now said, on one line, where they fall.
func TestInspectHourlyChartSaysTheHoursLeftOut(t *testing.T) {
	tl := newTally()
	for _, ms := range []int64{1763022660000, 1763109060000, 1763109120000, 1763112660000, 1763120000000} { // 11-13 08:31; 11-14 08:31, 08:32, 09:31, 11:33
		tl.add(pushpolicy.ParseCommand(`{"priority":1,"createdAt":` + itoa(ms) + `,"errorCode":1004}`))
	}
	var b strings.Builder
	if err := printInspect(&b, inspectReport(sqsmove.Queue{URL: "https://sqs/1/push-dlq"}, tl, false), nil); err != nil {
		t.Fatal(err)
	}
	hourly := b.String()[strings.Index(b.String(), "createdAt by hour"):]
	for _, want := range []string{
		"2025-11-13T08:00Z", "(no messages 2025-11-13 09:00–2025-11-14 08:00)", "2025-11-14T08:00Z",
		"2025-11-14T09:00Z", "(no messages 2025-11-14 10:00–11:00)", "2025-11-14T11:00Z",
	} {
		if !strings.Contains(hourly, want) {
			t.Errorf("the hourly chart lacks %q:\n%s", want, hourly)
		}
	}
	if strings.Count(hourly, "no messages") != 2 {
		t.Errorf("want two gaps said:\n%s", hourly)
	}
}
