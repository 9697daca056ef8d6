package lambdart_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/testsupport/lambdart"
)

const fnPkg = "./internal/testsupport/lambdart/testdata/fn"

func startFn(t *testing.T, env map[string]string) *lambdart.Runtime {
	t.Helper()
	return lambdart.Start(t, lambdart.Function{Bootstrap: lambdart.Build(t, fnPkg), Env: env})
}

func event(t testing.TB, bodies ...string) []byte {
	t.Helper()
	b, err := json.Marshal(lambdart.BodiesEvent("arn:aws:sqs:us-east-1:000000000000:q", "us-east-1", bodies...))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestInvokeEchoesReusesTheProcessAndMeasures(t *testing.T) {
	rt := startFn(t, nil)
	ctx := context.Background()
	inv, err := rt.Invoke(ctx, []byte(`{"hello":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if string(inv.Payload) != `{"hello":1}` || !inv.Cold || inv.N != 1 || inv.FunctionError != nil {
		t.Fatalf("first invocation: %+v", inv)
	}
	inv, err = rt.Invoke(ctx, event(t, "a", "b"))
	if err != nil {
		t.Fatal(err)
	}
	if inv.Cold || inv.N != 2 {
		t.Fatalf("second invocation should reuse the process: %+v", inv)
	}
	var resp struct{ BatchItemFailures []any }
	if err := json.Unmarshal(inv.Payload, &resp); err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("response %s: %v", inv.Payload, err)
	}
	// The invocation's own output is complete when Invoke returns: the
	// summary is the handler's last line before it answers.
	lines := lambdart.JSONLines(inv.Logs)
	if len(lines) != 3 || lines[2]["msg"] != "summary" || lines[0]["requestId"] != inv.RequestID || lines[0]["functionArn"] != rt.FunctionARN() {
		t.Fatalf("invocation logs: %s", inv.Logs)
	}
	if all := rt.JSONLogs(); len(all) != 4 || all[0]["msg"] != "init" {
		t.Fatalf("logs: %s", rt.Logs())
	}
	s := rt.Stats()
	if s.Processes != 1 || s.ColdStarts != 1 || len(s.ColdStart) != 1 || s.ColdStart[0] <= 0 || s.Invocations != 2 || len(s.Durations) != 2 || s.MaxRSSBytes <= 0 {
		t.Fatalf("stats: %+v", s)
	}
	t.Log(s.Summary())
}

func TestInitFailureNamesTheVariable(t *testing.T) {
	rt := startFn(t, map[string]string{"FAIL_INIT": "bogus-value"})
	for i := 0; i < 2; i++ { // each Invoke tries a fresh init, as Lambda does
		_, err := rt.Invoke(context.Background(), []byte(`{}`))
		if !errors.Is(err, lambdart.ErrInitFailed) || !strings.Contains(err.Error(), `FAIL_INIT="bogus-value" is not allowed`) {
			t.Fatalf("invoke %d: %v", i, err)
		}
	}
	if s := rt.Stats(); s.Processes != 2 || s.ColdStarts != 0 || s.InitFailures != 2 || s.Invocations != 0 {
		t.Fatalf("stats: %+v", s)
	}
}

func TestInitErrorPostedIsReadable(t *testing.T) {
	rt := startFn(t, map[string]string{"INIT_ERROR_POST": "PUSH_QUEUE_BASE_URL is empty"})
	_, err := rt.Invoke(context.Background(), []byte(`{}`))
	if !errors.Is(err, lambdart.ErrInitFailed) || !strings.Contains(err.Error(), "Runtime.InvalidConfig: PUSH_QUEUE_BASE_URL is empty") {
		t.Fatalf("got %v", err)
	}
}

func TestFunctionErrorIsAnOutcomeNotACrash(t *testing.T) {
	rt := startFn(t, nil)
	inv, err := rt.Invoke(context.Background(), event(t, "a", "error", "b"))
	if err != nil {
		t.Fatal(err)
	}
	if inv.FunctionError == nil || inv.FunctionError.Type != "errorString" || !strings.Contains(inv.FunctionError.Message, "asked for an error") || inv.Payload != nil {
		t.Fatalf("function error: %+v", inv)
	}
	// the process lives on
	inv, err = rt.Invoke(context.Background(), event(t, "c"))
	if err != nil || inv.Cold || inv.FunctionError != nil {
		t.Fatalf("after the error: %+v %v", inv, err)
	}
	if s := rt.Stats(); s.FunctionErrors != 1 || s.ColdStarts != 1 {
		t.Fatalf("stats: %+v", s)
	}
}

func TestCrashIsExitErrorAndTheNextInvokeIsCold(t *testing.T) {
	rt := startFn(t, nil)
	ctx := context.Background()
	if _, err := rt.Invoke(ctx, event(t, "a")); err != nil {
		t.Fatal(err)
	}
	inv, err := rt.Invoke(ctx, event(t, "a", "crash", "b"))
	if !errors.Is(err, lambdart.ErrCrashed) || !strings.Contains(err.Error(), "exit status 3") {
		t.Fatalf("crash: %+v %v", inv, err)
	}
	// it got as far as the crashing record
	if l := lambdart.JSONLines(inv.Logs); len(l) != 2 || l[1]["body"] != "crash" {
		t.Fatalf("crash logs: %s", inv.Logs)
	}
	inv, err = rt.Invoke(ctx, event(t, "c"))
	if err != nil || !inv.Cold {
		t.Fatalf("after the crash: %+v %v", inv, err)
	}
	if s := rt.Stats(); s.Crashes != 1 || s.ColdStarts != 2 || len(s.RSSBytes) != 2 || s.Invocations != 3 {
		t.Fatalf("stats: %+v", s)
	}
}

// aws-lambda-go reports a panic as a function error, then exits: the
// error is the outcome, and the next invocation is a cold start.
func TestPanicIsReportedThenTheProcessIsGone(t *testing.T) {
	rt := startFn(t, nil)
	ctx := context.Background()
	inv, err := rt.Invoke(ctx, event(t, "panic"))
	if err != nil || inv.FunctionError == nil || !strings.Contains(inv.FunctionError.Message, "panicked") {
		t.Fatalf("panic: %+v %v", inv, err)
	}
	inv, err = rt.Invoke(ctx, event(t, "a"))
	if err != nil || !inv.Cold {
		t.Fatalf("after the panic: %+v %v", inv, err)
	}
	if s := rt.Stats(); s.ColdStarts != 2 || s.Crashes != 0 || s.FunctionErrors != 1 {
		t.Fatalf("stats: %+v", s)
	}
}

func TestKillDuringKillsThatInvocation(t *testing.T) {
	rt := startFn(t, nil)
	rt.KillDuring(2)
	ctx := context.Background()
	var got []string
	for i := 1; i <= 3; i++ {
		inv, err := rt.Invoke(ctx, event(t, "x"))
		got = append(got, outcome(inv, err))
	}
	if want := "ok cold,crashed,ok cold"; strings.Join(got, ",") != want {
		t.Fatalf("outcomes %v, want %s", got, want)
	}
	if s := rt.Stats(); s.Crashes != 1 || s.ColdStarts != 2 || s.Invocations != 3 {
		t.Fatalf("stats: %+v", s)
	}
}

func TestKillDuringOnLogKillsMidBatch(t *testing.T) {
	rt := startFn(t, map[string]string{"SLEEP_MS": "5000"})
	rt.KillDuringOnLog(1, `"body":"sleep"`)
	inv, err := rt.Invoke(context.Background(), event(t, "a", "sleep", "b"))
	if !errors.Is(err, lambdart.ErrCrashed) {
		t.Fatalf("got %+v %v", inv, err)
	}
	l := lambdart.JSONLines(inv.Logs)
	if len(l) != 2 || l[0]["body"] != "a" || l[1]["body"] != "sleep" {
		t.Fatalf("it should have died in the sleep: %s", inv.Logs)
	}
}

func TestKillBetweenInvocationsMeansAColdStart(t *testing.T) {
	rt := startFn(t, nil)
	ctx := context.Background()
	if _, err := rt.Invoke(ctx, event(t, "a")); err != nil {
		t.Fatal(err)
	}
	rt.Kill()
	inv, err := rt.Invoke(ctx, event(t, "b"))
	if err != nil || !inv.Cold {
		t.Fatalf("%+v %v", inv, err)
	}
}

func TestTimeoutKillsTheProcess(t *testing.T) {
	rt := lambdart.Start(t, lambdart.Function{Bootstrap: lambdart.Build(t, fnPkg), Env: map[string]string{"SLEEP_MS": "10000"}, Timeout: 300 * time.Millisecond})
	ctx := context.Background()
	_, err := rt.Invoke(ctx, event(t, "sleep"))
	if !errors.Is(err, lambdart.ErrTimedOut) {
		t.Fatalf("got %v", err)
	}
	inv, err := rt.Invoke(ctx, event(t, "a"))
	if err != nil || !inv.Cold {
		t.Fatalf("after the timeout: %+v %v", inv, err)
	}
	// the function saw the deadline
	l := lambdart.JSONLines(inv.Logs)
	if dl, _ := l[0]["deadlineMs"].(float64); dl == 0 {
		t.Fatalf("no deadline seen: %s", inv.Logs)
	}
}

func TestMaxRSSSeesThePeak(t *testing.T) {
	rt := startFn(t, map[string]string{"ALLOC_MB": "96"})
	ctx := context.Background()
	if _, err := rt.Invoke(ctx, event(t, "a")); err != nil {
		t.Fatal(err)
	}
	before := rt.Stats().MaxRSSBytes
	if _, err := rt.Invoke(ctx, event(t, "alloc")); err != nil {
		t.Fatal(err)
	}
	rt.Kill()
	after := rt.Stats().MaxRSSBytes
	if before <= 0 || before >= 96<<20 || after < 96<<20 {
		t.Fatalf("peak RSS before %d, after allocating 96 MiB %d", before, after)
	}
}

func outcome(inv lambdart.Invocation, err error) string {
	switch {
	case errors.Is(err, lambdart.ErrCrashed):
		return "crashed"
	case err != nil:
		return err.Error()
	case inv.FunctionError != nil:
		return "error"
	case inv.Cold:
		return "ok cold"
	}
	return "ok"
}

// BenchmarkBatchOf10 measures the test function: cold start, time per
// batch of 10 records, peak memory. Processors' benchmarks do the same
// with their own bootstrap.
func BenchmarkBatchOf10(b *testing.B) {
	rt := lambdart.Start(b, lambdart.Function{Bootstrap: lambdart.Build(b, fnPkg)})
	payload := event(b, strings.Fields("a b c d e f g h i j")...)
	ctx := context.Background()
	if _, err := rt.Invoke(ctx, payload); err != nil { // the cold start, outside ns/op
		b.Fatal(err)
	}
	for b.Loop() {
		inv, err := rt.Invoke(ctx, payload)
		if err != nil || !bytes.Contains(inv.Payload, []byte("batchItemFailures")) {
			b.Fatal(inv, err)
		}
	}
	rt.Stats().Report(b)
}
