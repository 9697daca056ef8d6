package report_test

import (
	"testing"

	"github.com/deadletter/deadletter/internal/report"
)

// tester13: MaxBuckets "bounds the columns of the createdAt histogram",
// but the widest bucket is a week: a DLQ holding one message with
// createdAt 0 (or any old/bogus value) beside today's messages spans ~2,800
// weeks, and the page gets one <g> column (and a label, a value per series)
// per week. With one createdAt in nanoseconds among milliseconds
// (1.7e18 vs 1.7e12) the span is ~2.8e9 weeks: Histogram's label loop and
// the per-series Values slices need tens of GB (not run here: it would take
// the machine down).
// DEFECT (pushdlq.go Histogram: n is not bounded by MaxBuckets; a wider
// bucket or clamping outliers is needed).
func TestTester13HistogramColumnsAreBounded(t *testing.T) {
	const now = 1_731_573_000_000 // 2024-11-14, epoch ms
	p := report.PushDLQ{CodeMinutes: map[int]map[int64]int{1004: {0: 1, now - now%60_000: 5}}}
	labels, series, _, minutes := p.Histogram()
	if len(labels) > report.MaxBuckets {
		t.Fatalf("createdAt 0 beside %d: %d columns of %d minutes (MaxBuckets %d); each of %d series holds %d values",
			now, len(labels), minutes, report.MaxBuckets, len(series), len(series[0].Values))
	}
}

// tester13: Buckets (the terminal sparkline of pushdlq inspect) computes
// (at-from)*n in int64: with createdAt values ~1.7e18 apart (one in
// nanoseconds among milliseconds) the product overflows, the index goes
// negative, and out[min(i, n-1)] panics: pushdlq inspect crashes on one
// hostile message.
// DEFECT (term.go Buckets: overflow in (at - from) * int64(n)).
func TestTester13BucketsDoNotOverflow(t *testing.T) {
	const ms, ns = int64(1_731_573_000_000), int64(1_731_573_000_000_000_000)
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("Buckets panicked on createdAt %d and %d: %v", ms, ns, r)
		}
	}()
	out := report.Buckets(map[int64]int{ms: 1, ns: 1}, ms, ns, 60)
	sum := 0
	for _, v := range out {
		sum += v
	}
	if sum != 2 || out[0] != 1 || out[59] != 1 {
		t.Fatalf("buckets %v: want the two messages in the first and last", out)
	}
}
