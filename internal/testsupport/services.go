// Package testsupport finds the real services the tests run against (S3,
// SQS, PostgreSQL), as started by scripts/services.sh, and builds clients
// for them. A test that needs a service skips when it is absent, unless the
// run demands services (DEADLETTER_REQUIRE_SERVICES=1, set by scripts/test
// and CI), where it fails.
package testsupport

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/deadletter/deadletter/internal/localaws"
)

// Env names, shared with scripts/services.sh.
const (
	EnvRequire    = "DEADLETTER_REQUIRE_SERVICES"
	EnvS3Endpoint = "DEADLETTER_TEST_S3_ENDPOINT"
	AccessKey     = localaws.AccessKey
	SecretKey     = localaws.SecretKey
)

// need returns the value of env, or skips/fails the test when the service
// is not configured or not reachable.
func need(t testing.TB, env, service string) string {
	t.Helper()
	v := os.Getenv(env)
	if v == "" {
		missing(t, service+" is not configured ("+env+" is empty); start it with scripts/services.sh")
	}
	u, err := url.Parse(v)
	if err != nil || u.Host == "" {
		t.Fatalf("%s=%q is not a URL", env, v)
	}
	conn, err := net.DialTimeout("tcp", u.Host, 2*time.Second)
	if err != nil {
		missing(t, service+" at "+v+" is not reachable: "+err.Error())
	} else {
		conn.Close()
	}
	return v
}

func missing(t testing.TB, why string) {
	t.Helper()
	if os.Getenv(EnvRequire) == "1" {
		t.Fatal(why)
	}
	t.Skip(why)
}

// S3Endpoint returns the endpoint of the test S3 server.
func S3Endpoint(t testing.TB) string { return need(t, EnvS3Endpoint, "S3 (versitygw)") }

// AWSConfig is a static-credential config for local servers, with the
// commands' HTTP client (so benchmarks reuse connections as they do).
func AWSConfig() aws.Config {
	return localaws.Config()
}

// SetAWSEnv points the process's AWS SDK (the commands', through their
// environment) at local servers for the rest of the test: the test
// credentials, us-east-1, no profile, no shared files, no instance
// metadata; endpoints holds the per-service endpoints
// (AWS_ENDPOINT_URL_S3 and the like) and any other variable to set.
func SetAWSEnv(t testing.TB, endpoints map[string]string) {
	t.Helper()
	for k, v := range map[string]string{
		"AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": AccessKey, "AWS_SECRET_ACCESS_KEY": SecretKey,
		"AWS_EC2_METADATA_DISABLED": "true", "AWS_PROFILE": "", "AWS_CONFIG_FILE": os.DevNull, "AWS_SHARED_CREDENTIALS_FILE": os.DevNull,
	} {
		t.Setenv(k, v)
	}
	for k, v := range endpoints {
		t.Setenv(k, v)
	}
}

// S3Client returns a client for the test S3 server.
func S3Client(t testing.TB) *s3.Client { return S3ClientAt(S3Endpoint(t)) }

// S3ClientAt returns a client for an S3 endpoint (a Proxy in front of the
// test server, say).
func S3ClientAt(endpoint string) *s3.Client {
	return s3.NewFromConfig(AWSConfig(), func(o *s3.Options) {
		o.BaseEndpoint = aws.String(endpoint)
		o.UsePathStyle = true
	})
}

// NewBucket creates a uniquely named bucket and removes it after the test.
func NewBucket(t testing.TB, client *s3.Client) string {
	t.Helper()
	name := "t-" + RandomHex(8)
	ctx := context.Background()
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		t.Fatalf("create bucket %s: %v", name, err)
	}
	t.Cleanup(func() {
		p := s3.NewListObjectsV2Paginator(client, &s3.ListObjectsV2Input{Bucket: aws.String(name)})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				break
			}
			for _, o := range page.Contents {
				client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(name), Key: o.Key})
			}
		}
		client.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(name)})
	})
	return name
}

// RandomHex returns n random bytes as hex.
func RandomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
