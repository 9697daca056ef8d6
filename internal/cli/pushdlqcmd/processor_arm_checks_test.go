package pushdlqcmd

import (
	"context"
	"testing"

	"github.com/deadletter/deadletter/internal/pushpolicy"
	"github.com/deadletter/deadletter/internal/testsupport/fakelambda"
)

// arm accepts any epoch-millisecond window whose start is before
// its end, and writes it as ISO-8601 with a four-digit-year layout. A
// window beyond 9999-12-31 (epoch microseconds pasted for milliseconds, a
// common slip: 1731571800000000) is written as "56841-...Z", which
// internal/pushdlq.LoadConfig cannot parse: the processor refuses to start
// on every batch, while arm has already enabled the mapping and exited 0.
// arm should refuse the window (or write what LoadConfig reads back as the
// same policy).
// DEFECT (processor.go runProcessorArm / pushdlq.ProcessVars: no check that
// the written PROCESS_* round-trip through LoadConfig).
func TestArmWritesOnlyWhatTheProcessorReads(t *testing.T) {
	for _, window := range []string{
		"1731571800000000/1731573600000000",         // microseconds
		"253402300799999/253402300800000",           // ends at 10000-01-01T00:00:00Z
		"-62135596800001/-62135596799000",           // starts in year -1 (passes: round-trips)
		"2025-11-14T08:30:00Z/2025-11-14T09:00:00Z", // control: round-trips
	} {
		t.Run(window, func(t *testing.T) {
			e := newProcessorEnv(t)
			before := e.fake.Env(fnName)
			code, _, stderr := e.run(t, context.Background(), "processor", "arm", "--function", fnName, "--window", window, "--codes", "1004", "--yes")
			env := e.fake.Env(fnName)
			if code != 0 {
				// Refused: nothing may have been written or enabled.
				if env[pushpolicy.EnvStartAt] != before[pushpolicy.EnvStartAt] || e.fake.Mapping("map-1").State != "Disabled" {
					t.Fatalf("arm failed (exit %d) but changed things: env %v, mapping %+v\n%s", code, env, e.fake.Mapping("map-1"), stderr)
				}
				return
			}
			start, end, err := pushpolicy.ParseWindow(window)
			if err != nil {
				t.Fatal(err)
			}
			c, err := pushpolicy.LoadConfig(func(k string) string { return env[k] })
			if err != nil {
				t.Fatalf("arm exited 0 and enabled the mapping (%s), but the processor refuses what it wrote: %v\nPROCESS_START_AT=%q PROCESS_END_AT=%q",
					e.fake.Mapping("map-1").State, err, env[pushpolicy.EnvStartAt], env[pushpolicy.EnvEndAt])
			}
			if c.Policy.Start != start || c.Policy.End != end {
				t.Fatalf("arm wrote a window the processor reads as %d..%d, want %d..%d", c.Policy.Start, c.Policy.End, start, end)
			}
		})
	}
}

// arm checks the window and codes it writes, but not the rest of
// what the processor needs: on a function whose PUSH_DLQ_QUEUE_URL or
// PUSH_QUEUE_BASE_URL is missing (a half-deployed or hand-edited
// function), arm writes PROCESS_*, enables the mapping and exits 0, and
// internal/pushdlq.LoadConfig refuses the resulting environment, so every
// batch fails. arm should check the merged environment with LoadConfig and
// refuse before enabling anything.
// DEFECT (processor.go runProcessorArm: the merged environment is never
// checked against LoadConfig).
func TestArmRefusesAFunctionTheProcessorCannotRun(t *testing.T) {
	for _, missing := range []string{pushpolicy.EnvDLQURL, pushpolicy.EnvBaseURL} {
		t.Run(missing, func(t *testing.T) {
			e := newProcessorEnv(t)
			env := e.fake.Env(fnName)
			delete(env, missing)
			e.fake.AddFunction(fakelambda.Function{Name: fnName, Env: env})
			code, _, stderr := e.run(t, context.Background(), "processor", "arm", "--function", fnName, "--window", "2025-11-14T08:30:00Z/2025-11-14T09:00:00Z", "--codes", "1004", "--yes")
			after := e.fake.Env(fnName)
			_, err := pushpolicy.LoadConfig(func(k string) string { return after[k] })
			if code == 0 && err != nil {
				t.Fatalf("arm exited 0 and left the mapping %s, but the processor refuses the function's environment: %v\n%s", e.fake.Mapping("map-1").State, err, stderr)
			}
			if code != 0 && e.fake.Mapping("map-1").State != "Disabled" {
				t.Fatalf("arm failed (exit %d) but enabled the mapping: %s", code, stderr)
			}
		})
	}
}
