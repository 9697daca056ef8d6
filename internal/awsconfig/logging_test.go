package awsconfig_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/deadletter/deadletter/internal/awsconfig"
	"github.com/deadletter/deadletter/internal/testsupport"
)

const (
	sessionToken = "FwoGZXIvYXdzEXAMPLESESSIONTOKENsecret0123456789"
	secretKey    = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
)

// isolateEnv clears the AWS settings of the process and points the SDK at
// empty shared files, then sets vars.
func isolateEnv(t *testing.T, vars map[string]string) {
	t.Helper()
	for _, k := range []string{"AWS_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3",
		"AWS_ENDPOINT_URL_SQS", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_EC2_METADATA_DISABLED",
		"AWS_EC2_METADATA_SERVICE_ENDPOINT", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
		"AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "DEADLETTER_DEBUG"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_CONFIG_FILE", empty)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", empty)
	for k, v := range vars {
		t.Setenv(k, v)
	}
}

// TestDebugLogRedactsSecrets sends real requests, signed with session
// credentials, to the shared S3 and SQS servers with --debug-aws on, and
// checks the log: the header names are there, their values are not.
func TestDebugLogRedactsSecrets(t *testing.T) {
	s3URL, sqsURL := testsupport.S3Endpoint(t), testsupport.SQSEndpoint(t)
	isolateEnv(t, map[string]string{
		"AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": testsupport.AccessKey,
		"AWS_SECRET_ACCESS_KEY": secretKey, "AWS_SESSION_TOKEN": sessionToken, "AWS_EC2_METADATA_DISABLED": "true",
	})
	ctx := context.Background()
	for _, c := range []struct {
		name string
		call func(aws.Config, awsconfig.Settings)
		url  string
	}{
		{"s3", func(cfg aws.Config, s awsconfig.Settings) {
			_, _ = awsconfig.S3(cfg, s).ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("redact-" + testsupport.RandomHex(4))})
		}, s3URL},
		{"sqs", func(cfg aws.Config, s awsconfig.Settings) {
			_, _ = awsconfig.SQS(cfg, s).ListQueues(ctx, &sqs.ListQueuesInput{})
		}, sqsURL},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, viaEnv := range []bool{false, true} {
				var log bytes.Buffer
				s := awsconfig.Settings{EndpointURL: c.url, Debug: !viaEnv, Log: &log}
				if viaEnv {
					t.Setenv("DEADLETTER_DEBUG", "1")
				}
				cfg, err := awsconfig.Load(ctx, s)
				if err != nil {
					t.Fatal(err)
				}
				c.call(cfg, s)
				out := log.String()
				if !strings.Contains(out, "DEBUG Request") {
					t.Fatalf("no request was logged (viaEnv %v):\n%s", viaEnv, out)
				}
				for _, want := range []string{"Authorization: " + awsconfig.Redacted, "X-Amz-Security-Token: " + awsconfig.Redacted} {
					if !strings.Contains(out, want) {
						t.Errorf("log lacks %q:\n%s", want, out)
					}
				}
				for _, secret := range []string{sessionToken, secretKey, "Signature=", "Credential="} {
					if strings.Contains(out, secret) {
						t.Errorf("log holds %q:\n%s", secret, out)
					}
				}
			}
		})
	}
}

// TestRedactPresignedURL redacts the query of a URL the SDK presigned with
// session credentials.
func TestRedactPresignedURL(t *testing.T) {
	cfg := aws.Config{Region: "us-east-1", Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		return aws.Credentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: secretKey, SessionToken: sessionToken}, nil
	})}
	req, err := s3.NewPresignClient(s3.NewFromConfig(cfg)).PresignGetObject(context.Background(),
		&s3.GetObjectInput{Bucket: aws.String("b"), Key: aws.String("k")})
	if err != nil {
		t.Fatal(err)
	}
	for _, param := range []string{"X-Amz-Signature=", "X-Amz-Credential=", "X-Amz-Security-Token="} {
		if !strings.Contains(req.URL, param) {
			t.Fatalf("presigned URL lacks %s: %s", param, req.URL)
		}
	}
	got := awsconfig.Redact("GET " + req.URL + " HTTP/1.1")
	for _, secret := range []string{"AKIDEXAMPLE", "FwoGZXIvYXdz", strings.SplitN(strings.SplitN(req.URL, "X-Amz-Signature=", 2)[1], "&", 2)[0]} {
		if strings.Contains(got, secret) {
			t.Errorf("redacted URL holds %q: %s", secret, got)
		}
	}
	for _, want := range []string{"X-Amz-Signature=" + awsconfig.Redacted, "X-Amz-Credential=" + awsconfig.Redacted, "X-Amz-Security-Token=" + awsconfig.Redacted, "X-Amz-Expires="} {
		if !strings.Contains(got, want) {
			t.Errorf("redacted URL lacks %q: %s", want, got)
		}
	}
}

// TestNoCredentialsFailsFast: with no credentials anywhere and an instance
// metadata endpoint that never answers, the chain gives up within
// IMDSTimeout (the SDK's own retries took 5 s here, 8.9 s with no network).
func TestNoCredentialsFailsFast(t *testing.T) {
	if awsconfig.IMDSTimeout > 2*time.Second {
		t.Fatalf("IMDSTimeout %s: the credential chain must fail within 2 s", awsconfig.IMDSTimeout)
	}
	isolateEnv(t, map[string]string{"AWS_REGION": "us-east-1", "AWS_EC2_METADATA_SERVICE_ENDPOINT": "http://" + testsupport.Blackhole(t)})
	cfg, err := awsconfig.Load(context.Background(), awsconfig.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = cfg.Credentials.Retrieve(context.Background())
	took := time.Since(start)
	var ce *awsconfig.CredentialsError
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v, want a *CredentialsError", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v: not the metadata call's deadline", err)
	}
	if took > awsconfig.IMDSTimeout+time.Second {
		t.Errorf("the credential chain took %s (bound %s)", took, awsconfig.IMDSTimeout)
	}
	e, ok := awsconfig.Explain(err)
	if !ok || e.Kind != awsconfig.KindNoCredentials || !e.Auth || !strings.Contains(e.Message, "did not answer within 1.5s") {
		t.Errorf("Explain = %+v, %v", e, ok)
	}
}

// TestIMDSv1FallbackWarningStaysQuiet: the SDK warns "falling back to
// IMDSv1" when the token call is refused; that line is for --debug-aws only.
func TestIMDSv1FallbackWarningStaysQuiet(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "not here", http.StatusNotFound)
	}))
	defer srv.Close()
	isolateEnv(t, map[string]string{"AWS_REGION": "us-east-1", "AWS_EC2_METADATA_SERVICE_ENDPOINT": srv.URL})
	for _, debug := range []bool{false, true} {
		var log bytes.Buffer
		cfg, err := awsconfig.Load(context.Background(), awsconfig.Settings{Debug: debug, Log: &log})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cfg.Credentials.Retrieve(context.Background()); err == nil {
			t.Fatal("credentials from a metadata service that answers 404")
		}
		warned := strings.Contains(log.String(), "falling back to IMDSv1")
		if warned != debug {
			t.Errorf("debug %v: warning logged %v:\n%s", debug, warned, log.String())
		}
	}
}
