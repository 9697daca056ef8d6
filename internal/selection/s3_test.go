package selection

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/awsconfig"
	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// seedBodies returns the seed archive's objects (the bodies only), in a
// fixed order.
func seedBodies(t testing.TB) [][]byte {
	t.Helper()
	var bodies [][]byte
	err := filepath.WalkDir(filepath.Join(seedArchive, "demo", "dead-letter-archive", "sqs"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		bodies = append(bodies, b)
		return err
	})
	if err != nil || len(bodies) == 0 {
		t.Fatalf("reading the seed archive: %v (%d objects)", err, len(bodies))
	}
	return bodies
}

// putFolders uploads perFolder objects into each of folders date folders
// from 2024-01-01 (the seed objects, in turn) and returns their keys in
// the order a scan yields them.
func putFolders(t testing.TB, store archive.Store, folders, perFolder int) []string {
	t.Helper()
	bodies := seedBodies(t)
	root := dla.Layout{Stack: "demo"}.AreaPrefix(dla.AreaSQS)
	var keys []string
	for f := range folders {
		date := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, f).Format(dla.DateLayout)
		for i := range perFolder {
			keys = append(keys, fmt.Sprintf("%s%s/obj-%03d", root, date, i))
		}
	}
	sem := make(chan struct{}, 16)
	errs := make(chan error, len(keys))
	for i, k := range keys {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			errs <- store.Put(context.Background(), k, bodies[i%len(bodies)])
		}()
	}
	for range keys {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

// TestS3FoldersListedConcurrentlyKeepOrder runs a scan of 40 date folders
// on versitygw, listed two keys a page (so each folder takes several
// pages), through a proxy that holds each call 10 ms and counts the
// ListObjectsV2 calls in flight. With folders listed one after another
// (ListConcurrency 1, as before) at most one is; with 8 allowed, several
// are, never more than 8 plus the top-level listing, and the results come
// in the same order.
func TestS3FoldersListedConcurrentlyKeepOrder(t *testing.T) {
	client := testsupport.S3Client(t)
	bucket := testsupport.NewBucket(t, client)
	keys := putFolders(t, archive.NewS3(client, bucket), 40, 7)

	scan := func(listings int) ([]string, int) {
		proxy := testsupport.NewProxy(t, testsupport.S3Endpoint(t))
		proxy.SetDelay(10 * time.Millisecond)
		s3 := archive.NewS3(testsupport.S3ClientAt(proxy.URL), bucket)
		s3.PageSize = 2
		s3.ListConcurrency = listings
		store := archive.Contain(s3, dla.Layout{Stack: "demo"}.Root())
		got, st := run(t, store, Scope{Layout: dla.Layout{Stack: "demo"}, Area: dla.AreaSQS}, 4)
		if st.Listed != len(keys) {
			t.Errorf("listings %d: listed %d objects, want %d", listings, st.Listed, len(keys))
		}
		return got, proxy.MaxInFlight("ListObjectsV2")
	}
	serial, serialMax := scan(1)
	concurrent, concurrentMax := scan(8)
	if !slices.Equal(serial, concurrent) {
		t.Fatalf("the results differ:\nserial     %q\nconcurrent %q", serial, concurrent)
	}
	var stripped []string
	for _, k := range concurrent {
		stripped = append(stripped, strings.TrimSuffix(k, " !")) // the seed's unreadable objects
	}
	if !slices.Equal(stripped, keys) {
		t.Fatalf("the results are not every key in date and key order: %q", stripped)
	}
	if serialMax != 1 {
		t.Errorf("serial listing: %d ListObjectsV2 in flight at once, want 1", serialMax)
	}
	if concurrentMax < 2 || concurrentMax > 8+1 {
		t.Errorf("concurrent listing: %d ListObjectsV2 in flight at once, want 2 to 9", concurrentMax)
	}
	t.Logf("ListObjectsV2 in flight at once: serial %d, concurrent %d", serialMax, concurrentMax)
}

// BenchmarkS3Search is a scan for a granule no object holds over about
// 2,000 objects in 10 and in 365 date folders on versitygw, straight and
// through a proxy that holds every call 20 ms (a round trip to real S3),
// with the folders listed one after another (listings=1, as before) and 16
// at a time. It reports objects per second and the most ListObjectsV2
// calls in flight at once.
//
//	go test -run '^$' -bench BenchmarkS3Search -benchtime 2x ./internal/selection/
func BenchmarkS3Search(b *testing.B) {
	client := testsupport.S3Client(b)
	scope := Scope{Layout: dla.Layout{Stack: "demo"}, Area: dla.AreaSQS, Filter: dla.Filter{Granules: []string{"NO-SUCH-GRANULE"}}}
	for _, folders := range []int{10, 365} {
		bucket := testsupport.NewBucket(b, client)
		keys := putFolders(b, archive.NewS3(client, bucket), folders, 2000/folders)
		for _, delay := range []time.Duration{0, 20 * time.Millisecond} {
			for _, listings := range []int{1, archive.DefaultListConcurrency} {
				b.Run(fmt.Sprintf("folders=%d/delay=%v/listings=%d", folders, delay, listings), func(b *testing.B) {
					proxy := testsupport.NewProxy(b, testsupport.S3Endpoint(b))
					proxy.SetDelay(delay)
					s3 := archive.NewS3(testsupport.S3ClientAt(proxy.URL), bucket)
					s3.ListConcurrency = listings
					store := archive.Contain(s3, dla.Layout{Stack: "demo"}.Root())
					b.ResetTimer()
					for range b.N {
						st, err := Run(context.Background(), store, scope, 64, func(Result) error { return nil })
						if err != nil || st.Listed != len(keys) {
							b.Fatalf("%v, %+v", err, st)
						}
					}
					b.ReportMetric(float64(len(keys)*b.N)/b.Elapsed().Seconds(), "objects/s")
					b.ReportMetric(float64(proxy.MaxInFlight("ListObjectsV2")), "max-lists-in-flight")
				})
			}
		}
	}
}

// BenchmarkS3SearchCPU is BenchmarkS3Search's scan over 2,000 objects in
// 10 and in 365 date folders, straight to versitygw (no proxy in this
// process), with the S3 client dla builds (awsconfig.Load and
// awsconfig.S3). Besides objects per second it reports this process's CPU
// per object (user + system, getrusage): dla's side of the floor, since
// versitygw's CPU is another process's. Profile the GET path with
//
//	go test -run '^$' -bench BenchmarkS3SearchCPU -benchtime 5x -cpuprofile cpu.prof ./internal/selection/
func BenchmarkS3SearchCPU(b *testing.B) {
	endpoint := testsupport.S3Endpoint(b)
	b.Setenv("AWS_ACCESS_KEY_ID", testsupport.AccessKey)
	b.Setenv("AWS_SECRET_ACCESS_KEY", testsupport.SecretKey)
	b.Setenv("AWS_PROFILE", "")
	b.Setenv("AWS_CONFIG_FILE", os.DevNull)
	b.Setenv("AWS_SHARED_CREDENTIALS_FILE", os.DevNull)
	settings := awsconfig.Settings{Region: "us-east-1", EndpointURL: endpoint}
	cfg, err := awsconfig.Load(context.Background(), settings)
	if err != nil {
		b.Fatal(err)
	}
	client := awsconfig.S3(cfg, settings)
	scope := Scope{Layout: dla.Layout{Stack: "demo"}, Area: dla.AreaSQS, Filter: dla.Filter{Granules: []string{"NO-SUCH-GRANULE"}}}
	cpu := func() time.Duration { return testsupport.ProcessCPU(b) }
	for _, folders := range []int{10, 365} {
		bucket := testsupport.NewBucket(b, testsupport.S3Client(b))
		keys := putFolders(b, archive.NewS3(client, bucket), folders, 2000/folders)
		store := archive.Contain(archive.NewS3(client, bucket), dla.Layout{Stack: "demo"}.Root())
		b.Run(fmt.Sprintf("folders=%d", folders), func(b *testing.B) {
			start := cpu()
			for range b.N {
				st, err := Run(context.Background(), store, scope, 64, func(Result) error { return nil })
				if err != nil || st.Listed != len(keys) {
					b.Fatalf("%v, %+v", err, st)
				}
			}
			used := cpu() - start
			b.ReportMetric(float64(len(keys)*b.N)/b.Elapsed().Seconds(), "objects/s")
			b.ReportMetric(float64(used.Microseconds())/float64(len(keys)*b.N), "cpu-µs/object")
		})
	}
}
