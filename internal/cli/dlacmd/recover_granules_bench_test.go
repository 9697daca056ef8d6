package dlacmd

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/dla/gen"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// BenchmarkRecoverGranulesPerMessage recovers one message holding 1,000,
// 2,000 and 4,000 granules, with --dry-run and for real (--keep), and
// reports the time per granule: it must stay flat as the granules grow.
// Every granule has its own file and lists one file they all share (a row
// every granule rewrites), which made the dry run quadratic: its one
// transaction kept a version of that row per granule.
//
//	go test -run '^$' -bench BenchmarkRecoverGranulesPerMessage -benchtime 1x ./internal/cli/dla/
func BenchmarkRecoverGranulesPerMessage(b *testing.B) {
	for _, n := range []int{1000, 2000, 4000} {
		for _, mode := range []string{"dry-run", "real"} {
			b.Run(fmt.Sprintf("granules=%d/%s", n, mode), func(b *testing.B) {
				var elapsed time.Duration
				for range b.N {
					b.StopTimer()
					dbURL := testsupport.NewCumulusDatabase(b, gen.ReferenceSeed())
					root := b.TempDir()
					store, err := archive.NewLocal(root)
					if err != nil {
						b.Fatal(err)
					}
					if err := store.Put(context.Background(), "bench/dead-letter-archive/sqs/2024-03-01/many-granules", manyGranuleMessage(n)); err != nil {
						b.Fatal(err)
					}
					args := []string{"recover", "--archive", root + "/bench", "--database-url", dbURL, "--offline", "-o", "ndjson"}
					if mode == "dry-run" {
						args = append(args, "--dry-run")
					} else {
						args = append(args, "--yes", "--keep")
					}
					b.StartTimer()
					start := time.Now()
					r := runAt(b, time.Now, map[string]string{"DEADLETTER_NO_PROMPT": "1"}, "", args...)
					elapsed += time.Since(start)
					b.StopTimer()
					if r.code != 0 || !strings.Contains(r.stdout, fmt.Sprintf(`"granules_written":%d`, n)) {
						b.Fatalf("exit %d, %d granules not all written:\n%s\n%s", r.code, n, r.stdout[max(0, len(r.stdout)-600):], r.stderr)
					}
				}
				b.ReportMetric(float64(elapsed.Milliseconds())/float64(b.N), "ms/message")
				b.ReportMetric(float64(elapsed.Microseconds())/float64(b.N*n), "µs/granule")
				b.ReportMetric(0, "ns/op")
			})
		}
	}
}

// manyGranuleMessage is a completed Cumulus message with n granules of the
// generator's reference collection and provider.
func manyGranuleMessage(n int) []byte {
	var gs []string
	for i := range n {
		gs = append(gs, fmt.Sprintf(`{"granuleId":"MOD09GQ.A2024061.h%05d.006","files":[
 {"bucket":"protected","key":"MOD09GQ/%05d.hdf","fileName":"%05d.hdf","size":1000,"type":"data"},
 {"bucket":"public","key":"MOD09GQ/shared-browse.jpg","fileName":"shared-browse.jpg","size":10,"type":"browse"}]}`, i, i, i))
	}
	return fmt.Appendf(nil, `{"cumulus_meta":{"state_machine":"arn:aws:states:us-east-1:123456789012:stateMachine:bench-IngestGranule",
 "execution_name":"many-granules","workflow_start_time":1709251200000},
 "meta":{"status":"completed","workflow_name":"IngestGranule","collection":{"name":"MOD09GQ","version":"006"},
  "provider":{"id":"LPCLOUD_S3","protocol":"s3","host":"lp-prod-protected"}},
 "payload":{"granules":[%s]}}`, strings.Join(gs, ","))
}
