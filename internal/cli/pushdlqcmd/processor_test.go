package pushdlqcmd

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/awsconfig"
	"github.com/deadletter/deadletter/internal/cli/cmdutil"
	"github.com/deadletter/deadletter/internal/cli/iostreams"
	"github.com/deadletter/deadletter/internal/lambdactl"
	"github.com/deadletter/deadletter/internal/pushpolicy"
	"github.com/deadletter/deadletter/internal/sqsmove"
	"github.com/deadletter/deadletter/internal/testsupport"
	"github.com/deadletter/deadletter/internal/testsupport/fakelambda"
)

const fnName = "my-push-dlq"

// processorEnv is a fake Lambda holding the push-dlq function (its queues
// real ones in fauxqs) and one disabled mapping.
type processorEnv struct {
	fake      *fakelambda.Server
	dlq, base string
}

func newProcessorEnv(t *testing.T) *processorEnv {
	t.Helper()
	c := testsupport.SQSClient(t)
	e := &processorEnv{fake: fakelambda.New(t)}
	e.dlq, e.base = testsupport.NewPushQueues(t, c, "proc", 1, 2)
	testsupport.SendBodies(t, c, e.dlq, []string{`{"a":1}`, `{"a":2}`, `{"a":3}`}, nil)
	e.fake.AddFunction(fakelambda.Function{Name: fnName, Env: map[string]string{
		pushpolicy.EnvDLQURL: e.dlq, pushpolicy.EnvBaseURL: e.base,
		pushpolicy.EnvStartAt: "2025-01-01T00:00:00Z", pushpolicy.EnvEndAt: "2025-01-01T01:00:00Z", pushpolicy.EnvErrorCodes: "2003",
		"LOG_LEVEL": "debug", "OTHER": "kept",
	}})
	e.fake.AddMapping(fakelambda.Mapping{UUID: "map-1", Function: fnName, EventSourceARN: "arn:aws:sqs:us-east-1:123456789012:push-dlq", State: "Disabled", BatchSize: 10})
	return e
}

func (e *processorEnv) run(t *testing.T, ctx context.Context, args ...string) (int, string, string) {
	t.Helper()
	ios, _, out, errOut := iostreams.Test()
	f := NewFactory(ios, func(string) string { return "" })
	f.Poll = time.Millisecond
	f.Lambda = func(context.Context) (lambdactl.API, error) {
		return awsconfig.Lambda(testsupport.AWSConfig(), awsconfig.Settings{EndpointURL: e.fake.URL}), nil
	}
	f.SQS = func(context.Context) (sqsmove.API, string, error) { return testsupport.SQSClient(t), "fauxqs", nil }
	code := Run(ctx, f, args)
	return code, out.String(), errOut.String()
}

const armWindow = "2025-11-14T08:30:00Z/2025-11-14T09:00:00Z"

// arm sets only the PROCESS_* variables (the others are kept), waits for
// the update through InProgress, then enables the mapping.
func TestProcessorArmMergesWaitsAndEnables(t *testing.T) {
	e := newProcessorEnv(t)
	e.fake.AddFunction(fakelambda.Function{Name: fnName, Env: e.fake.Env(fnName), UpdateStatuses: []string{"InProgress", "InProgress", "Successful"}})
	code, _, stderr := e.run(t, context.Background(), "processor", "arm", "--function", fnName, "--window", armWindow,
		"--codes", "1004,1001", "--max-concurrency", "3", "--yes")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	env := e.fake.Env(fnName)
	want := map[string]string{pushpolicy.EnvStartAt: "2025-11-14T08:30:00.000Z", pushpolicy.EnvEndAt: "2025-11-14T09:00:00.000Z",
		pushpolicy.EnvErrorCodes: "1004,1001", "LOG_LEVEL": "debug", "OTHER": "kept", pushpolicy.EnvDLQURL: e.dlq, pushpolicy.EnvBaseURL: e.base}
	if len(env) != len(want) {
		t.Errorf("environment %v, want %v", env, want)
	}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s = %q, want %q", k, env[k], v)
		}
	}
	// The processor reads what arm wrote.
	if c, err := pushpolicy.LoadConfig(func(k string) string { return env[k] }); err != nil || c.Policy.CodesString() != "1004,1001" {
		t.Errorf("the processor's configuration: %+v, %v", c, err)
	}
	if n := e.fake.Calls("GetFunctionConfiguration"); n < 4 { // the read, then InProgress twice and Successful
		t.Errorf("%d reads: the update was not waited for", n)
	}
	m := e.fake.Mapping("map-1")
	if m.State != "Enabled" || m.MaxConcurrency != 3 {
		t.Errorf("mapping %+v", m)
	}
	if !strings.Contains(stderr, "PROCESS_ERROR_CODES") || !strings.Contains(stderr, "2003 -> 1004,1001") || !strings.Contains(stderr, "other 4 variables are kept") {
		t.Errorf("the plan:\n%s", stderr)
	}
}

// A change made by someone else between the read and the write wins:
// nothing is overwritten, the mapping stays disabled, and the error says why.
func TestProcessorArmRevisionConflict(t *testing.T) {
	e := newProcessorEnv(t)
	e.fake.BeforeUpdate = func(s *fakelambda.Server, name string) { s.SetVar(name, "OTHER", "changed by a colleague") }
	code, _, stderr := e.run(t, context.Background(), "processor", "arm", "--function", fnName, "--window", armWindow, "--codes", "1004", "--yes")
	if code != cmdutil.ExitFailure || !strings.Contains(stderr, "changed by someone else since it was read; nothing was written") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	env := e.fake.Env(fnName)
	if env["OTHER"] != "changed by a colleague" || env[pushpolicy.EnvErrorCodes] != "2003" {
		t.Errorf("environment after the conflict: %v", env)
	}
	if m := e.fake.Mapping("map-1"); m.State != "Disabled" {
		t.Errorf("the mapping was enabled after a failed update: %+v", m)
	}
}

func TestProcessorArmUpdateFailed(t *testing.T) {
	e := newProcessorEnv(t)
	e.fake.AddFunction(fakelambda.Function{Name: fnName, Env: e.fake.Env(fnName), UpdateStatuses: []string{"InProgress", "Failed"},
		UpdateReason: "The function could not be updated: KMS key is disabled"})
	code, _, stderr := e.run(t, context.Background(), "processor", "arm", "--function", fnName, "--window", armWindow, "--codes", "1004", "--yes")
	if code != cmdutil.ExitFailure || !strings.Contains(stderr, "KMS key is disabled") || !strings.Contains(stderr, "the mapping was not enabled") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if m := e.fake.Mapping("map-1"); m.State != "Disabled" {
		t.Errorf("mapping %+v", m)
	}
}

func TestProcessorMissingFunctionOrMapping(t *testing.T) {
	e := newProcessorEnv(t)
	for _, verb := range []string{"status", "arm", "disarm"} {
		args := []string{"processor", verb, "--function", "no-such-function", "--yes"}
		if verb == "arm" {
			args = append(args, "--window", armWindow, "--codes", "1004")
		}
		if verb == "status" {
			args = args[:len(args)-1]
		}
		code, _, stderr := e.run(t, context.Background(), args...)
		if code != cmdutil.ExitFailure || !strings.Contains(stderr, "function no-such-function: not found") {
			t.Errorf("%s: exit %d: %s", verb, code, stderr)
		}
	}
	e.fake.AddFunction(fakelambda.Function{Name: "lonely"})
	code, _, stderr := e.run(t, context.Background(), "processor", "disarm", "--function", "lonely", "--yes")
	if code != cmdutil.ExitFailure || !strings.Contains(stderr, "has no event source mapping") {
		t.Errorf("no mapping: exit %d: %s", code, stderr)
	}
	code, _, stderr = e.run(t, context.Background(), "processor", "disarm", "--function", fnName, "--mapping", "map-9", "--yes")
	if code != cmdutil.ExitFailure || !strings.Contains(stderr, "no event source mapping map-9") {
		t.Errorf("unknown --mapping: exit %d: %s", code, stderr)
	}
}

// The guardrails come before any call: '*' over 24 hours, no --yes
// without a terminal, a bad window.
func TestProcessorArmGuardrails(t *testing.T) {
	e := newProcessorEnv(t)
	for _, args := range [][]string{
		{"--window", "2025-11-14T00:00:00Z/2025-11-16T00:00:00Z", "--codes", "*", "--yes"},
		{"--window", armWindow, "--codes", "1004"},
		{"--window", "2025-11-14T09:00:00Z/2025-11-14T08:00:00Z", "--codes", "1004", "--yes"},
		{"--window", armWindow, "--codes", "1004", "--max-concurrency", "1", "--yes"},
	} {
		code, _, stderr := e.run(t, context.Background(), append([]string{"processor", "arm", "--function", fnName}, args...)...)
		if code != cmdutil.ExitUsage {
			t.Errorf("%v: exit %d: %s", args, code, stderr)
		}
	}
	if n := e.fake.Calls("GetFunctionConfiguration") + e.fake.Calls("UpdateFunctionConfiguration"); n != 0 {
		t.Errorf("Lambda was called %d times before the guardrails passed", n)
	}
	// --allow-wide-window lets '*' through; --dry-run changes nothing.
	code, _, stderr := e.run(t, context.Background(), "processor", "arm", "--function", fnName, "--window", "2025-11-14T00:00:00Z/2025-11-16T00:00:00Z",
		"--codes", "*", "--allow-wide-window", "--dry-run")
	if code != 0 || !strings.Contains(stderr, "dry run") || e.fake.Calls("UpdateFunctionConfiguration") != 0 || e.fake.Mapping("map-1").State != "Disabled" {
		t.Errorf("--dry-run: exit %d: %s", code, stderr)
	}
}

func TestProcessorStatusAndDisarmClear(t *testing.T) {
	e := newProcessorEnv(t)
	code, stdout, stderr := e.run(t, context.Background(), "processor", "status", "--function", fnName, "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var st ProcessorStatus
	if err := json.Unmarshal([]byte(stdout), &st); err != nil {
		t.Fatal(err)
	}
	if st.WindowStart == nil || *st.WindowStart != "2025-01-01T00:00:00.000Z" || len(st.Codes) != 1 || st.Codes[0].Name != "NotificationNotFound" ||
		len(st.Mappings) != 1 || st.Mappings[0].State != "Disabled" || st.Mappings[0].BatchSize != 10 {
		t.Errorf("status %+v", st)
	}
	if len(st.Queues) != 3 || st.Queues[0].Role != "dlq" || st.Queues[0].Visible != 3 || !strings.HasSuffix(st.Queues[1].Name, "P1") || !strings.HasSuffix(st.Queues[2].Name, "P2") {
		t.Errorf("queues %+v", st.Queues)
	}
	code, stdout, _ = e.run(t, context.Background(), "processor", "status", "--function", fnName)
	if code != 0 || !strings.Contains(stdout, "2003 NotificationNotFound") || !strings.Contains(stdout, "map-1 Disabled, batch size 10") {
		t.Errorf("status table:\n%s", stdout)
	}

	e.fake.AddMapping(fakelambda.Mapping{UUID: "map-2", Function: fnName, State: "Enabled", BatchSize: 5})
	if code, _, stderr := e.run(t, context.Background(), "processor", "disarm", "--function", fnName, "--yes"); code != cmdutil.ExitUsage || !strings.Contains(stderr, "choose one with --mapping") {
		t.Fatalf("two mappings: exit %d: %s", code, stderr)
	}
	code, _, stderr = e.run(t, context.Background(), "processor", "disarm", "--function", fnName, "--mapping", "map-2", "--clear", "--yes")
	if code != 0 {
		t.Fatalf("disarm: exit %d: %s", code, stderr)
	}
	if m := e.fake.Mapping("map-2"); m.State != "Disabled" {
		t.Errorf("map-2 %+v", m)
	}
	env := e.fake.Env(fnName)
	c, err := pushpolicy.LoadConfig(func(k string) string { return env[k] })
	if err != nil {
		t.Fatalf("after --clear the processor would not start: %v", err)
	}
	if env["OTHER"] != "kept" || c.Policy.Start != 0 || c.Policy.End != 1 {
		t.Errorf("after --clear: %v", env)
	}
	// Nothing a real producer writes is eligible.
	cmd := pushpolicy.ParseCommand(`{"action":"push","createdAt":1731573000000,"errorCode":0,"priority":1}`)
	if d := pushpolicy.Decide(cmd, c.Policy, "b"); d.Eligible {
		t.Errorf("a cleared window replays %+v", d)
	}
}

// --watch prints a depth line every interval until Ctrl-C, then exits 0.
func TestProcessorStatusWatch(t *testing.T) {
	e := newProcessorEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2500*time.Millisecond)
	defer cancel()
	code, stdout, stderr := e.run(t, ctx, "processor", "status", "--function", fnName, "--watch", "--interval", "1s")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := 0
	for _, l := range strings.Split(stdout, "\n") {
		if strings.Contains(l, "push-dlq 3 (0 in flight, 0 delayed)") {
			lines++
		}
	}
	if lines < 2 {
		t.Errorf("%d depth lines in:\n%s", lines, stdout)
	}
}
