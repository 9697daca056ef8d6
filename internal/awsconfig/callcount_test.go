package awsconfig

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// With DEADLETTER_AWS_CALL_COUNTS set, every HTTP attempt is counted by
// service and operation, retries included, and written to the file named;
// without it nothing is counted.
func TestCallCountsCountEveryAttemptByOperation(t *testing.T) {
	isolate(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	calls.mu.Lock()
	calls.n = nil
	calls.mu.Unlock()
	first := true
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead && first {
			first = false
			w.WriteHeader(http.StatusServiceUnavailable) // retried by the SDK
			return
		}
		w.Header().Set("ETag", `"x"`)
	}))
	defer srv.Close()
	ctx := context.Background()
	load := func() *s3.Client {
		s := Settings{Region: "us-east-1", EndpointURL: srv.URL}
		cfg, err := Load(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		return S3(cfg, s)
	}

	uncounted := load()
	if _, err := uncounted.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("b"), Key: aws.String("k")}); err != nil {
		t.Fatal(err)
	}
	if got := CallCounts(); got != "total 0\n" {
		t.Fatalf("counted without %s: %q", CallCountsEnv, got)
	}

	path := filepath.Join(t.TempDir(), "calls")
	t.Setenv(CallCountsEnv, path)
	first = true
	c := load()
	if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("b"), Key: aws.String("k")}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("b"), Key: aws.String("k"), Body: strings.NewReader("x")}); err != nil {
			t.Fatal(err)
		}
	}
	if err := WriteCallCounts(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if want := "S3 PutObject 3\nS3 HeadObject 2\ntotal 5\n"; err != nil || string(b) != want {
		t.Fatalf("counts %q (%v), want %q", b, err, want)
	}
}
