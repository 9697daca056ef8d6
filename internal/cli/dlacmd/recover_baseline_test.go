package dlacmd

import (
	"strings"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/dla/gen"
	"github.com/deadletter/deadletter/internal/testsupport"
	"github.com/deadletter/deadletter/internal/workflow/dlarecover"
)

// The benchmark's baseline switches are an environment variable read by
// recover alone, not flags an operator meets: the old --x-no-* flags are
// unknown, DEADLETTER_BENCH_BASELINE sets each switch or all, and an
// unknown name is a usage error rather than a benchmark of nothing.
func TestBenchBaselineIsAnEnvironmentVariableNotAFlag(t *testing.T) {
	if r := run(t, false, nil, "", "recover", "--archive", t.TempDir(), "--x-no-batch", "--dry-run"); r.code != 2 || !strings.Contains(r.stderr, "unknown flag") {
		t.Fatalf("--x-no-batch: exit %d: %s", r.code, r.stderr)
	}
	for _, c := range []struct {
		env  string
		want dlarecover.Baseline
	}{
		{"all", dlarecover.Baseline{NoBatch: true, NoSpool: true, NoGCTuning: true, NoPrefetch: true, NoMsgIndex: true, NoOneProc: true}},
		{"batch, prefetch", dlarecover.Baseline{NoBatch: true, NoPrefetch: true}},
		{"", dlarecover.Baseline{}},
	} {
		opts := &RecoverOptions{Factory: &Factory{Getenv: func(k string) string {
			if k == EnvBenchBaseline {
				return c.env
			}
			return ""
		}}}
		if err := benchBaseline(opts); err != nil {
			t.Fatalf("%q: %v", c.env, err)
		}
		if opts.Baseline != c.want {
			t.Errorf("%q: %+v, want %+v", c.env, opts.Baseline, c.want)
		}
	}
	r := run(t, false, map[string]string{EnvBenchBaseline: "no-such"}, "", "recover", "--archive", t.TempDir(), "--dry-run")
	if r.code != 2 || !strings.Contains(r.stderr, `unknown switch "no-such"`) {
		t.Fatalf("an unknown switch: exit %d: %s", r.code, r.stderr)
	}
}

// baselineEnv is env with every optimisation of recover off when baseline
// is set (the benchmark's baseline), for tests that compare the two.
func baselineEnv(env map[string]string, baseline bool) map[string]string {
	out := map[string]string{}
	for k, v := range env {
		out[k] = v
	}
	if baseline {
		out[EnvBenchBaseline] = "all"
	}
	return out
}

// Piped, recover's plan and summary keep each part on one line as they
// always did (a script may read them); only a terminal folds them, to
// stderr's own width.
func TestRecoverSummaryIsFoldedOnlyOnATerminal(t *testing.T) {
	archiveDir := localGeneratedArchive(t, 40)
	url := testsupport.NewCumulusDatabase(t, gen.ReferenceSeed())
	r := runAt(t, time.Now, map[string]string{"DEADLETTER_NO_PROMPT": "1"}, "", "recover", "--archive", archiveDir,
		"--database-url", url, "--offline", "--yes", "--dry-run")
	for _, want := range []string{"0 failed, 0 unreadable, 0 left in place, 0 not processed\n", "granules "} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("piped stderr lacks %q on one line:\n%s", want, r.stderr)
		}
	}
	for _, l := range strings.Split(r.stderr, "\n") {
		if strings.HasPrefix(l, "      ") && strings.Contains(l, ",") {
			t.Errorf("piped stderr folded a line: %q\n%s", l, r.stderr)
		}
	}
}
