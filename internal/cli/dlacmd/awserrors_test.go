package dlacmd

import (
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/cli/cmdutil"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// awsEnv points the process's AWS settings at the shared S3 server with the
// given credentials (none when key is "").
func awsEnv(t *testing.T, key, secret string) {
	t.Helper()
	vars := map[string]string{
		"AWS_ENDPOINT_URL_S3": testsupport.S3Endpoint(t), "AWS_REGION": "us-east-1",
		"AWS_ACCESS_KEY_ID": key, "AWS_SECRET_ACCESS_KEY": secret, "AWS_SESSION_TOKEN": "",
		"AWS_EC2_METADATA_DISABLED": "true", "AWS_EC2_METADATA_SERVICE_ENDPOINT": "", "AWS_PROFILE": "",
		"AWS_CONFIG_FILE": os.DevNull, "AWS_SHARED_CREDENTIALS_FILE": os.DevNull,
		"AWS_CONTAINER_CREDENTIALS_FULL_URI": "", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "", "AWS_WEB_IDENTITY_TOKEN_FILE": "",
	}
	for k, v := range vars {
		t.Setenv(k, v)
		if v == "" {
			os.Unsetenv(k)
		}
	}
}

// oneLineError checks that a failed run printed exactly one line on stderr,
// with no summary and none of the SDK's chain.
func oneLineError(t *testing.T, r runResult, wantCode int, wants ...string) {
	t.Helper()
	if r.code != wantCode {
		t.Errorf("exit %d, want %d; stderr:\n%s", r.code, wantCode, r.stderr)
	}
	if strings.Count(r.stderr, "\n") != 1 || !strings.HasPrefix(r.stderr, "dla: ") {
		t.Errorf("stderr is not one line:\n%s", r.stderr)
	}
	for _, bad := range []string{"matching", "0 match", " read (", "operation error", "RequestID", "https response error"} {
		if strings.Contains(r.stderr, bad) {
			t.Errorf("stderr holds %q:\n%s", bad, r.stderr)
		}
	}
	for _, w := range wants {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
		}
	}
}

// TestAWSErrorsAreOneLine runs search and stats against the shared S3
// server with a bucket that does not exist and with bad credentials.
func TestAWSErrorsAreOneLine(t *testing.T) {
	client := testsupport.S3Client(t)
	bucket := testsupport.NewBucket(t, client)
	missing := "missing-" + testsupport.RandomHex(6)
	for _, verb := range []string{"search", "stats"} {
		t.Run(verb+"/missing bucket", func(t *testing.T) {
			awsEnv(t, testsupport.AccessKey, testsupport.SecretKey)
			r := run(t, false, nil, "", verb, "--archive", "s3://"+missing+"/demo")
			oneLineError(t, r, cmdutil.ExitFailure, "s3://"+missing+"/", "bucket does not exist (NoSuchBucket)")
		})
		t.Run(verb+"/wrong secret", func(t *testing.T) {
			awsEnv(t, testsupport.AccessKey, "not-the-secret")
			r := run(t, false, nil, "", verb, "--archive", "s3://"+bucket+"/demo")
			oneLineError(t, r, cmdutil.ExitAuth, "credentials were rejected by S3 (SignatureDoesNotMatch)")
		})
		t.Run(verb+"/unknown key", func(t *testing.T) {
			awsEnv(t, "AKIDNOSUCHUSER", testsupport.SecretKey)
			r := run(t, false, nil, "", verb, "--archive", "s3://"+bucket+"/demo")
			oneLineError(t, r, cmdutil.ExitAuth, "credentials were rejected")
		})
		t.Run(verb+"/unknown profile", func(t *testing.T) {
			awsEnv(t, "", "")
			r := run(t, false, nil, "", verb, "--archive", "s3://"+bucket+"/demo", "--profile", "nosuchprofile")
			oneLineError(t, r, cmdutil.ExitAuth, `AWS profile "nosuchprofile" is not in the shared config`)
		})
		t.Run(verb+"/unreachable", func(t *testing.T) {
			awsEnv(t, testsupport.AccessKey, testsupport.SecretKey)
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			closed := "http://" + ln.Addr().String()
			ln.Close()
			r := run(t, false, nil, "", verb, "--archive", "s3://"+bucket+"/demo", "--endpoint-url", closed)
			oneLineError(t, r, cmdutil.ExitFailure, "cannot reach the AWS endpoint "+closed+" (S3): connection refused")
		})
	}
}

// TestNoCredentialsFailFastThroughCLI: no credentials anywhere, and an
// instance metadata endpoint that accepts connections but never answers.
// The SDK alone took 5 s here (8.9 s with no network at all).
func TestNoCredentialsFailFastThroughCLI(t *testing.T) {
	bucket := testsupport.NewBucket(t, testsupport.S3Client(t))
	awsEnv(t, "", "")
	os.Unsetenv("AWS_EC2_METADATA_DISABLED")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	t.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", "http://"+ln.Addr().String())
	start := time.Now()
	r := run(t, false, nil, "", "search", "--archive", "s3://"+bucket+"/demo")
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("no credentials took %s to report", took)
	}
	oneLineError(t, r, cmdutil.ExitAuth, "no AWS credentials found", "did not answer within")
}
