package main

import (
	"strings"
	"testing"
)

// Event streams as go test -json wrote them (times and elapsed dropped).
const (
	passedTestX = `{"Action":"start","Package":"m/d"}
{"Action":"run","Package":"m/d","Test":"TestX"}
{"Action":"output","Package":"m/d","Test":"TestX","Output":"=== RUN   TestX\n"}
{"Action":"output","Package":"m/d","Test":"TestX","Output":"    d_test.go:3: quiet\n"}
{"Action":"output","Package":"m/d","Test":"TestX","Output":"--- PASS: TestX (0.00s)\n"}
{"Action":"pass","Package":"m/d","Test":"TestX"}
{"Action":"output","Package":"m/d","Output":"PASS\n"}
{"Action":"output","Package":"m/d","Output":"ok  \tm/d\t0.002s\n"}
{"Action":"pass","Package":"m/d"}
`
	// A TestMain that calls os.Exit(0) without m.Run: go test says "ok".
	exitedBeforeRun = `{"Action":"start","Package":"m/b"}
{"Action":"output","Package":"m/b","Output":"ok  \tm/b\t0.001s\n"}
{"Action":"pass","Package":"m/b"}
`
	// m.Run with a -run that matched nothing.
	noTestsToRun = `{"Action":"start","Package":"m/d"}
{"Action":"output","Package":"m/d","Output":"testing: warning: no tests to run\n"}
{"Action":"output","Package":"m/d","Output":"PASS\n"}
{"Action":"output","Package":"m/d","Output":"ok  \tm/d\t0.002s [no tests to run]\n"}
{"Action":"pass","Package":"m/d"}
`
	failedSubtest = `{"Action":"start","Package":"m/a"}
{"Action":"run","Package":"m/a","Test":"TestBad"}
{"Action":"output","Package":"m/a","Test":"TestBad","Output":"=== RUN   TestBad\n"}
{"Action":"run","Package":"m/a","Test":"TestBad/sub"}
{"Action":"output","Package":"m/a","Test":"TestBad/sub","Output":"=== RUN   TestBad/sub\n"}
{"Action":"output","Package":"m/a","Test":"TestBad/sub","Output":"    a_test.go:4: boom here\n"}
{"Action":"output","Package":"m/a","Test":"TestBad/sub","Output":"--- FAIL: TestBad/sub (0.00s)\n"}
{"Action":"fail","Package":"m/a","Test":"TestBad/sub"}
{"Action":"output","Package":"m/a","Test":"TestBad","Output":"--- FAIL: TestBad (0.00s)\n"}
{"Action":"fail","Package":"m/a","Test":"TestBad"}
{"Action":"output","Package":"m/a","Output":"FAIL\n"}
{"Action":"output","Package":"m/a","Output":"FAIL\tm/a\t0.002s\n"}
{"Action":"fail","Package":"m/a"}
`
	noTestFiles = `{"Action":"start","Package":"m/n"}
{"Action":"output","Package":"m/n","Output":"?   \tm/n\t[no test files]\n"}
{"Action":"skip","Package":"m/n"}
`
)

func run(t *testing.T, stream string, strict bool, want ...string) (int, string) {
	t.Helper()
	var out strings.Builder
	rc := report(strings.NewReader(stream), &out, options{strict: strict, want: want})
	return rc, out.String()
}

func TestSlowestNamesAPackagesSlowestTopLevelTestsAfterItsSummary(t *testing.T) {
	stream := `{"Action":"run","Package":"m/s","Test":"TestQuick"}
{"Action":"pass","Package":"m/s","Test":"TestQuick","Elapsed":0.2}
{"Action":"run","Package":"m/s","Test":"TestSlow"}
{"Action":"run","Package":"m/s","Test":"TestSlow/sub"}
{"Action":"pass","Package":"m/s","Test":"TestSlow/sub","Elapsed":9}
{"Action":"pass","Package":"m/s","Test":"TestSlow","Elapsed":9.04}
{"Action":"run","Package":"m/s","Test":"TestMiddle"}
{"Action":"pass","Package":"m/s","Test":"TestMiddle","Elapsed":3}
{"Action":"output","Package":"m/s","Output":"ok  \tm/s\t12.3s\n"}
{"Action":"pass","Package":"m/s"}
`
	var out strings.Builder
	rc := report(strings.NewReader(stream), &out, options{slowest: 2})
	want := "ok  \tm/s\t12.3s\ntest: slowest: TestSlow 9.0 s, TestMiddle 3.0 s\ntest: 3 tests ran in 1 package\n"
	if rc != 0 || out.String() != want {
		t.Errorf("exit %d, printed\n%s\nwant exit 0 and\n%s", rc, out.String(), want)
	}
}

func TestAPassingRunPrintsWhatGoTestPrintsAndHowManyRan(t *testing.T) {
	rc, out := run(t, passedTestX+noTestFiles, true, "TestX")
	want := "ok  \tm/d\t0.002s\n?   \tm/n\t[no test files]\ntest: 1 test ran in 2 packages\n"
	if rc != 0 || out != want {
		t.Errorf("exit %d, printed\n%s\nwant exit 0 and\n%s", rc, out, want)
	}
}

func TestAPackageWhoseTestMainExitsBeforeMRunFailsByName(t *testing.T) {
	for _, strict := range []bool{false, true} {
		rc, out := run(t, passedTestX+exitedBeforeRun, strict)
		if rc != 1 || !strings.Contains(out, "test: FAILED: m/b: its test binary exited with status 0 before running a test") {
			t.Errorf("strict %v: exit %d, printed\n%s", strict, rc, out)
		}
	}
}

func TestAPackageThatFoundNoTestToRunFailsOnlyWhenStrict(t *testing.T) {
	if rc, out := run(t, noTestsToRun, false); rc != 0 {
		t.Errorf("not strict: exit %d, printed\n%s", rc, out)
	}
	if rc, out := run(t, noTestsToRun, true); rc != 1 || !strings.Contains(out, "test: FAILED: m/d: has test files but ran no test") {
		t.Errorf("strict: exit %d, printed\n%s", rc, out)
	}
}

func TestATestGivenThatDidNotRunFailsByName(t *testing.T) {
	rc, out := run(t, passedTestX, false, "TestX", "TestY", "TestZ")
	if rc != 1 || !strings.Contains(out, "test: FAILED: m/d: 2 of the 3 tests given did not run: TestY, TestZ") {
		t.Errorf("exit %d, printed\n%s", rc, out)
	}
}

func TestAFailingTestPrintsItsOutputUnderItsFailLine(t *testing.T) {
	rc, out := run(t, failedSubtest, true)
	want := "--- FAIL: TestBad (0.00s)\n    --- FAIL: TestBad/sub (0.00s)\n        a_test.go:4: boom here\nFAIL\nFAIL\tm/a\t0.002s\n"
	if rc != 1 || out != want {
		t.Errorf("exit %d, printed\n%s\nwant exit 1 and\n%s", rc, out, want)
	}
}

func TestAPackageThatNeverEndedFails(t *testing.T) {
	stream := strings.SplitAfter(passedTestX, "\n")
	rc, out := run(t, strings.Join(stream[:4], ""), false)
	if rc != 1 || !strings.Contains(out, "    d_test.go:3: quiet\n") || !strings.Contains(out, "test: FAILED: m/d: its tests did not finish") {
		t.Errorf("exit %d, printed\n%s", rc, out)
	}
}

// A test binary run under test2json (scripts/test's passes of a built
// binary) prints no summary line: testreport writes go test's, so a log
// reads the same, and a failure names its package.
func TestABinaryRunUnderTest2jsonGetsGoTestsSummaryLine(t *testing.T) {
	passed := `{"Action":"start","Package":"m/d"}
{"Action":"run","Package":"m/d","Test":"TestX"}
{"Action":"output","Package":"m/d","Test":"TestX","Output":"--- PASS: TestX (0.00s)\n"}
{"Action":"pass","Package":"m/d","Test":"TestX"}
{"Action":"output","Package":"m/d","Output":"PASS\n"}
{"Action":"pass","Package":"m/d","Elapsed":1.5}
`
	if rc, out := run(t, passed, true, "TestX"); rc != 0 || out != "ok  \tm/d\t1.500s\ntest: 1 test ran in 1 package\n" {
		t.Errorf("exit %d, printed\n%s", rc, out)
	}
	failed := `{"Action":"start","Package":"m/a"}
{"Action":"run","Package":"m/a","Test":"TestBad"}
{"Action":"output","Package":"m/a","Test":"TestBad","Output":"--- FAIL: TestBad (0.00s)\n"}
{"Action":"fail","Package":"m/a","Test":"TestBad"}
{"Action":"output","Package":"m/a","Output":"FAIL\n"}
{"Action":"fail","Package":"m/a","Elapsed":0.25}
`
	if rc, out := run(t, failed, true); rc != 1 || out != "--- FAIL: TestBad (0.00s)\nFAIL\nFAIL\tm/a\t0.250s\n" {
		t.Errorf("exit %d, printed\n%q", rc, out)
	}
}
