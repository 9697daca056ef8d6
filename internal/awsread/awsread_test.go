package awsread

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/deadletter/deadletter/internal/recovery"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// s3Answering is a real S3 client (no retries) against a server that
// answers every request with status and, when code is set, S3's XML error.
func s3Answering(t *testing.T, status int, code string) *s3.Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(status)
		if code != "" && r.Method != http.MethodHead {
			fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>the %s message</Message><RequestId>R1</RequestId><HostId>H1</HostId></Error>`, code, code)
		}
	}))
	t.Cleanup(srv.Close)
	return s3Client(srv.URL, credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", ""))
}

func s3Client(endpoint string, creds aws.CredentialsProvider) *s3.Client {
	return s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint), UsePathStyle: true,
		Credentials: creds, Retryer: aws.NopRetryer{}})
}

type kind string

const (
	refusedKind   kind = "refused (the message's failure)"
	notFoundKind  kind = "not found"
	transientKind kind = "transient (stops the run)"
)

func kindOf(err error) kind {
	switch {
	case errors.Is(err, recovery.ErrNotFound):
		return notFoundKind
	case errors.Is(err, recovery.ErrRefused):
		return refusedKind
	}
	return transientKind
}

// S3's answers about the object asked for are the object's (ErrRefused or
// ErrNotFound); answers every object would get are not.
func TestObjectsSortsS3Errors(t *testing.T) {
	cases := []struct {
		status int
		code   string
		want   kind
	}{
		{403, "AccessDenied", refusedKind},
		{403, "AllAccessDisabled", refusedKind},
		{403, "InvalidObjectState", refusedKind}, // an archived (Glacier) object
		{400, "InvalidBucketName", refusedKind},
		{400, "InvalidRequest", refusedKind},
		{400, "InvalidArgument", refusedKind},
		{400, "AuthorizationHeaderMalformed", refusedKind}, // the bucket is in another region
		{301, "PermanentRedirect", refusedKind},
		{404, "NoSuchKey", notFoundKind},
		{404, "NoSuchBucket", notFoundKind},
		{400, "ExpiredToken", transientKind},
		{403, "InvalidAccessKeyId", transientKind},
		{403, "SignatureDoesNotMatch", transientKind},
		{403, "XAdminUserNotFound", transientKind},
		{403, "RequestTimeTooSkewed", transientKind},
		{403, "AccountProblem", transientKind},
		{400, "RequestTimeout", transientKind},
		{503, "SlowDown", transientKind},
		{500, "InternalError", transientKind},
		{502, "", transientKind},
		{429, "TooManyRequestsException", transientKind},
		{408, "", transientKind},
	}
	for _, c := range cases {
		o := Objects{Client: s3Answering(t, c.status, c.code)}
		_, err := o.GetObject(context.Background(), "b", "k")
		if err == nil {
			t.Fatalf("%d %s: no error", c.status, c.code)
		}
		if got := kindOf(err); got != c.want {
			t.Errorf("GetObject answered %d %s: %s, want %s (%v)", c.status, c.code, got, c.want, err)
		}
		if c.want == refusedKind {
			// One line for the failed-sqs error: code, message, status.
			want := fmt.Sprintf("%s: the %s message (HTTP %d)", c.code, c.code, c.status)
			if err.Error() != want {
				t.Errorf("%d %s: the error reads %q, want %q", c.status, c.code, err, want)
			}
		}
	}
}

// HeadObject's errors carry no body: the status decides.
func TestObjectSizeSortsS3Errors(t *testing.T) {
	for _, c := range []struct {
		status int
		want   kind
	}{{403, refusedKind}, {400, refusedKind}, {404, notFoundKind}, {500, transientKind}, {503, transientKind}} {
		o := Objects{Client: s3Answering(t, c.status, "")}
		if _, err := o.ObjectSize(context.Background(), "b", "k"); err == nil || kindOf(err) != c.want {
			t.Errorf("HeadObject answered %d: %v (%s), want %s", c.status, err, kindOf(err), c.want)
		}
	}
}

type noCredentials struct{}

func (noCredentials) Retrieve(context.Context) (aws.Credentials, error) {
	return aws.Credentials{}, errors.New("no EC2 IMDS role found")
}

// Failures before any answer (no endpoint, no credentials, a cancelled run)
// are never the object's.
func TestObjectsFailuresWithoutAnAnswerAreTransient(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	if _, err := (Objects{Client: s3Client(url, credentials.NewStaticCredentialsProvider("a", "b", ""))}).GetObject(context.Background(), "b", "k"); err == nil || kindOf(err) != transientKind {
		t.Errorf("connection refused: %v (%s)", err, kindOf(err))
	}
	live := httptest.NewServer(http.NotFoundHandler())
	defer live.Close()
	if _, err := (Objects{Client: s3Client(live.URL, noCredentials{})}).GetObject(context.Background(), "b", "k"); err == nil || kindOf(err) != transientKind {
		t.Errorf("no credentials: %v (%s)", err, kindOf(err))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := (Objects{Client: s3Answering(t, 403, "AccessDenied")}).GetObject(ctx, "b", "k"); err == nil || kindOf(err) != transientKind {
		t.Errorf("cancelled: %v (%s)", err, kindOf(err))
	}
}

func TestObjectsSystemBucket(t *testing.T) {
	var o recovery.Objects = Objects{ReplaceBucket: "sys"}
	if o.SystemBucket() != "sys" || (Objects{}).SystemBucket() != "" {
		t.Error("SystemBucket is not ReplaceBucket")
	}
}

// Against the S3 server: the object's own failures and the credentials'.
func TestObjectsAgainstS3(t *testing.T) {
	client := testsupport.S3Client(t)
	bucket := testsupport.NewBucket(t, client)
	ctx := context.Background()
	if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("a/b.json"), Body: strings.NewReader("{}")}); err != nil {
		t.Fatal(err)
	}
	o := Objects{Client: client}
	if b, err := o.GetObject(ctx, bucket, "a/b.json"); err != nil || string(b) != "{}" {
		t.Fatalf("GetObject: %q %v", b, err)
	}
	if n, err := o.ObjectSize(ctx, bucket, "a/b.json"); err != nil || n != 2 {
		t.Fatalf("ObjectSize: %d %v", n, err)
	}
	for _, c := range []struct {
		name, bucket, key string
		want              kind
	}{
		{"missing key", bucket, "a/gone.json", notFoundKind},
		{"missing bucket", "t-no-such-bucket-" + testsupport.RandomHex(4), "k", notFoundKind},
		{"invalid bucket name", "Bad..Bucket!", "x", refusedKind},
	} {
		_, err := o.GetObject(ctx, c.bucket, c.key)
		if err == nil || kindOf(err) != c.want {
			t.Errorf("GetObject %s: %v (%s), want %s", c.name, err, kindOf(err), c.want)
		}
		t.Logf("%s: %v", c.name, err)
	}
	for name, creds := range map[string]aws.CredentialsProvider{
		"wrong secret":       credentials.NewStaticCredentialsProvider(testsupport.AccessKey, "not-the-secret", ""),
		"unknown access key": credentials.NewStaticCredentialsProvider("AKIANOBODY", "x", ""),
	} {
		bad := Objects{Client: s3Client(testsupport.S3Endpoint(t), creds)}
		_, err := bad.GetObject(ctx, bucket, "a/b.json")
		if err == nil || kindOf(err) != transientKind {
			t.Errorf("%s: %v (%s), want %s", name, err, kindOf(err), transientKind)
		}
		t.Logf("%s: %v", name, err)
	}
}
