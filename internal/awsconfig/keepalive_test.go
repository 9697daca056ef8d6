package awsconfig

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Waves of 64 concurrent GETs (dla search's --concurrency 64) against a
// server that keeps connections alive reuse their connections: with the SDK's
// default of 10 idle connections per host, every wave after the first dialled
// about 54 new ones.
func TestConcurrentRequestsReuseConnections(t *testing.T) {
	isolate(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	var dials atomic.Int64
	var release sync.WaitGroup
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
	for wave := 0; wave < waves; wave++ {
		start := make(chan struct{})
		errs := make(chan error, concurrency)
		release.Add(concurrency)
		for i := 0; i < concurrency; i++ {
			go func() {
				defer release.Done()
				<-start
				out, err := client.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String("b"), Key: aws.String("k")})
				if err == nil {
					_, err = io.Copy(io.Discard, out.Body)
					out.Body.Close()
				}
				errs <- err
			}()
		}
		close(start)
		release.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	// The first wave may dial up to one connection per request; later waves
	// find them idle. (With 10 idle per host this was about 64 + 3 × 54.)
	if n := dials.Load(); n > concurrency {
		t.Fatalf("%d waves of %d concurrent GETs dialled %d connections, want at most %d", waves, concurrency, n, concurrency)
	}
}
