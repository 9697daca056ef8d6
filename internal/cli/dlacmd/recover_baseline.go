package dlacmd

import (
	"strings"

	"github.com/deadletter/deadletter/internal/cli/cmdutil"
)

// EnvBenchBaseline switches recover's optimisations off, for the benchmark
// that measures before and after in one run (scripts/bench-recover,
// BenchmarkRecover): a comma-separated list of batch, spool, gc-tuning,
// prefetch, msg-index and one-proc, or all. It is read only here and is
// no flag: an operator never meets it.
const EnvBenchBaseline = "DEADLETTER_BENCH_BASELINE"

// benchBaseline sets opts' switches (dlarecover.Baseline) from EnvBenchBaseline; an unknown name
// is a usage error, so that a benchmark never measures what it did not ask.
func benchBaseline(opts *RecoverOptions) error {
	v := strings.TrimSpace(opts.Factory.Getenv(EnvBenchBaseline))
	if v == "" {
		return nil
	}
	b := &opts.Baseline
	switches := map[string]*bool{"batch": &b.NoBatch, "spool": &b.NoSpool, "gc-tuning": &b.NoGCTuning,
		"prefetch": &b.NoPrefetch, "msg-index": &b.NoMsgIndex, "one-proc": &b.NoOneProc}
	for _, name := range strings.Split(v, ",") {
		name = strings.TrimSpace(name)
		if name == "all" {
			for _, p := range switches {
				*p = true
			}
			continue
		}
		p, ok := switches[name]
		if !ok {
			return cmdutil.UsageErrorf("%s: unknown switch %q (want batch, spool, gc-tuning, prefetch, msg-index, one-proc or all)", EnvBenchBaseline, name)
		}
		*p = true
	}
	return nil
}
