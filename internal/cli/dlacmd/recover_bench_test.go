package dlacmd

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/dla/gen"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// BenchmarkRecover writes generated archives (1 to 5 granules per message,
// every generation and status, no malformed objects) from a local directory
// into a fresh local PostgreSQL database, at concurrency 1 and 8, with
// --offline (no Step Functions reads). It reports messages per
// second, the process's CPU (user and system) per message (the recover's,
// with the proxy's, which is small beside it; PostgreSQL's is its own), and
// the database round trips per granule and per message,
// counted by a proxy in front of PostgreSQL (testsupport.TCPProxy: a
// simple query, an extended-protocol Sync or the connection's startup sent
// while no reply is awaited starts one; a pipeline of many Syncs is one).
//
//	go test -run '^$' -bench BenchmarkRecover -benchtime 1x ./internal/cli/dlacmd/
//
// DEADLETTER_BENCH_RECOVER_N sets the messages (default 10000). Against an
// earlier build: run it in a checkout of that commit (or scripts/bench-recover
// with BEFORE=<commit>).
func BenchmarkRecover(b *testing.B) {
	n := 10000
	if v, err := strconv.Atoi(os.Getenv("DEADLETTER_BENCH_RECOVER_N")); err == nil && v > 0 {
		n = v
	}
	for _, conc := range []int{1, 8} {
		benchRecoverRun(b, n, conc)
	}
}

func benchRecoverRun(b *testing.B, n, conc int) {
	{
		b.Run(fmt.Sprintf("messages=%d/concurrency=%d", n, conc), func(b *testing.B) {
			var msgs, granules, trips int64
			var elapsed, cpu time.Duration
			for range b.N {
				b.StopTimer()
				dbURL, dir, g := benchRecoverSetup(b, n)
				u, _ := url.Parse(dbURL)
				pg := testsupport.NewTCPProxy(b, u.Host)
				b.StartTimer()
				start, cpu0 := time.Now(), testsupport.ProcessCPU(b)
				args := []string{"recover", "--archive", dir, "--database-url", pg.ViaProxy(b, dbURL), "--include-legacy",
					"--offline", "--yes", "--concurrency", strconv.Itoa(conc), "-o", "ndjson"}
				r := runAt(b, time.Now, map[string]string{"DEADLETTER_NO_PROMPT": "1"}, "", args...)
				elapsed += time.Since(start)
				cpu += testsupport.ProcessCPU(b) - cpu0
				b.StopTimer()
				var sum struct {
					Written, Dropped, Failed, Unreadable int64
				}
				lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
				if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil || r.code != 0 || sum.Written+sum.Dropped != int64(n) {
					b.Fatalf("exit %d, summary %+v (%v): %s", r.code, sum, err, r.stderr)
				}
				msgs += int64(n)
				granules += g
				trips += pg.RoundTrips()
			}
			b.ReportMetric(float64(msgs)/elapsed.Seconds(), "msgs/s")
			b.ReportMetric(float64(trips)/float64(granules), "roundtrips/granule")
			b.ReportMetric(float64(trips)/float64(msgs), "roundtrips/msg")
			b.ReportMetric(float64(cpu.Microseconds())/1000/float64(msgs), "cpu-ms/msg")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// benchRecoverSetup creates a database with the tables and the generator's
// reference rows, and writes n generated messages under a temporary
// directory; it returns the database URL, the stack folder and the number
// of granules.
func benchRecoverSetup(b *testing.B, n int) (string, string, int64) {
	ctx := context.Background()
	dbURL := testsupport.NewCumulusDatabase(b, gen.ReferenceSeed())
	root := b.TempDir()
	store, err := archive.NewLocal(root)
	if err != nil {
		b.Fatal(err)
	}
	var granules int64
	err = gen.Generate(gen.Options{Stack: "bench", Count: n, Seed: 42, Days: 10, MinGranules: 1, MaxGranules: 5, Malformed: -1},
		func(o gen.Object) error {
			granules += int64(len(o.Granules))
			return store.Put(ctx, o.Key, o.Body)
		})
	if err != nil {
		b.Fatal(err)
	}
	return dbURL, root + "/bench", granules
}
