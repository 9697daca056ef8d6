package pushdlqcmd

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/deadletter/deadletter/internal/cli/iostreams"
	"github.com/deadletter/deadletter/internal/pushpolicy/gen"
	"github.com/deadletter/deadletter/internal/sqsmove"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// BenchmarkReplay replays BENCH_MESSAGES (default 10,000) generated failed
// pushes from a DLQ on the test SQS server through the whole command, and
// reports messages per second and SQS API calls per replayed message
// (counted by a proxy in front of the server: receives, sends, deletes,
// releases and the queue lookups all count).
//
//	go test -run '^$' -bench BenchmarkReplay -benchtime 1x ./internal/cli/pushdlq/
func BenchmarkReplay(b *testing.B) {
	n := 10000
	if v, err := strconv.Atoi(os.Getenv("BENCH_MESSAGES")); err == nil && v > 0 {
		n = v
	}
	endpoint := testsupport.SQSEndpoint(b)
	direct := testsupport.SQSClientAt(endpoint)
	for b.Loop() {
		b.StopTimer()
		prefix := "bench" + testsupport.RandomHex(3) + "-"
		dlq := testsupport.CreateQueue(b, direct, prefix+"dlq", nil)
		for p := 1; p <= 3; p++ {
			testsupport.CreateQueue(b, direct, prefix+"P"+strconv.Itoa(p), nil)
		}
		var bodies []string
		gen.Generate(gen.Options{Count: n, Seed: 1, Start: time.Date(2025, 11, 14, 8, 30, 0, 0, time.UTC)}, func(_ int, body string) {
			bodies = append(bodies, body)
		})
		testsupport.SendBodies(b, direct, dlq, bodies, func(int) map[string]types.MessageAttributeValue { return nil })
		proxy := testsupport.NewProxy(b, endpoint)
		ios, _, out, errOut := iostreams.Test()
		f := NewFactory(ios, func(string) string { return "" })
		f.SQS = func(context.Context) (sqsmove.API, string, error) {
			return testsupport.SQSClientAt(proxy.URL), "bench", nil
		}
		args := []string{"replay", "--dlq", dlq, "--queue-base-url", strings.TrimSuffix(dlq, "dlq"),
			"--window", "2025-11-14T08:30:00Z/2025-11-14T09:00:00Z", "--codes", "*", "--yes", "-o", "json",
			"--journal", filepath.Join(b.TempDir(), "journal.ndjson")}
		b.StartTimer()
		start := time.Now()
		code := Run(context.Background(), f, args)
		elapsed := time.Since(start)
		b.StopTimer()
		if code != 0 {
			b.Fatalf("exit %d: %s", code, errOut.String())
		}
		sent, _ := strconv.Atoi(strings.TrimSpace(strings.SplitN(strings.SplitN(out.String(), `"sent": `, 2)[1], ",", 2)[0]))
		calls := 0
		for _, c := range proxy.Calls() {
			calls += c
		}
		b.ReportMetric(float64(sent)/elapsed.Seconds(), "msgs/s")
		b.ReportMetric(float64(calls)/float64(sent), "calls/msg")
		b.ReportMetric(float64(sent), "sent")
		b.Logf("%d messages, %d sent in %s, calls %v", n, sent, elapsed.Round(time.Millisecond), proxy.Calls())
		b.StartTimer()
	}
}
