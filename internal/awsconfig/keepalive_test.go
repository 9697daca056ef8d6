package awsconfig

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Waves of 64 concurrent GETs (dla search's --concurrency 64) against a
// server that keeps connections alive reuse their connections: with the SDK's
// default of 10 idle connections per host, every wave after the first dialled
// about 54 new ones, and 54 of each wave's connections were closed instead
// of kept. Each wave starts once every connection of the last one is back in
// the pool (httptrace's PutIdleConn), so that how fast the transport's
// goroutines run on a loaded machine decides nothing: a wave can then dial
// only for the requests beyond the pool's connections, and the waves together
// never more than one connection per concurrent request.
func TestConcurrentRequestsReuseConnections(t *testing.T) {
	isolate(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	var dials atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"granules":[]}`)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			dials.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	s := Settings{Region: "us-east-1", EndpointURL: srv.URL}
	cfg, err := Load(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	client := S3(cfg, s)
	const concurrency, waves = 64, 4
	for wave := 1; wave <= waves; wave++ {
		start := make(chan struct{})
		errs := make(chan error, concurrency)
		// One report per request of how its connection went back to the
		// pool: nil if kept, else why it was closed.
		pooled := make(chan error, concurrency)
		ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
			PutIdleConn: func(err error) { pooled <- err },
		})
		for i := 0; i < concurrency; i++ {
			go func() {
				<-start
				out, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("b"), Key: aws.String("k")})
				if err == nil {
					_, err = io.Copy(io.Discard, out.Body)
					out.Body.Close()
				}
				errs <- err
			}()
		}
		close(start)
		for i := 0; i < concurrency; i++ {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		// Wait for the connections to go back to the pool before the next
		// wave. Not every one reports it to this trace: a connection dialled
		// for a request that an idle one served first goes to the pool
		// untraced (net/http's dial race), so the wait ends when all have
		// reported or none has for a while; what is asserted is that none
		// was closed, and the dials below.
		for i := 0; i < concurrency; i++ {
			quiet := time.NewTimer(2 * time.Second)
			select {
			case err := <-pooled:
				quiet.Stop()
				if err != nil {
					t.Fatalf("wave %d: a connection was closed instead of kept for reuse: %v", wave, err)
				}
				continue
			case <-quiet.C:
				t.Logf("wave %d: %d of %d connections reported going back to the pool", wave, i, concurrency)
			}
			break
		}
		if n := dials.Load(); n > concurrency {
			t.Fatalf("after wave %d of %d concurrent GETs: %d connections dialled, want at most %d (one per concurrent request)", wave, concurrency, n, concurrency)
		}
	}
}
