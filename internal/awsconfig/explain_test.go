package awsconfig_test

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/deadletter/deadletter/internal/awsconfig"
)

// opErr builds the error chain the SDK returns for a service's answer.
func opErr(status int, api error) error {
	return &smithy.OperationError{ServiceID: "S3", OperationName: "ListObjectsV2", Err: &awshttp.ResponseError{
		RequestID: "REQ123",
		ResponseError: &smithyhttp.ResponseError{
			Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status}},
			Err:      api,
		},
	}}
}

// sendErr builds the chain of a request that never got an answer.
func sendErr(rawURL string, cause error) error {
	return &smithy.OperationError{ServiceID: "S3", OperationName: "ListObjectsV2", Err: &smithyhttp.RequestSendError{
		Err: &url.Error{Op: "Get", URL: rawURL, Err: cause},
	}}
}

func TestExplain(t *testing.T) {
	listCtx := func(err error) error { return fmt.Errorf("list s3://b/demo/dead-letter-archive/sqs/: %w", err) }
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}
	noCreds := &awsconfig.CredentialsError{Err: fmt.Errorf("failed to refresh cached credentials, no EC2 IMDS role found, %w",
		errors.New("access disabled to EC2 IMDS via client option"))}
	for _, c := range []struct {
		name  string
		err   error
		kind  string
		auth  bool
		wants []string
	}{
		{"no such bucket", listCtx(opErr(404, &types.NoSuchBucket{Message: aws.String("The specified bucket does not exist")})),
			awsconfig.KindNoBucket, false, []string{"list s3://b/demo/dead-letter-archive/sqs/: ", "bucket does not exist"}},
		{"access denied", listCtx(opErr(403, &smithy.GenericAPIError{Code: "AccessDenied", Message: "Access Denied"})),
			awsconfig.KindAccessDenied, true, []string{"access denied (AccessDenied) to s3:ListBucket:", "docs/permissions.md"}},
		{"bare 403", listCtx(opErr(403, errors.New("forbidden"))), awsconfig.KindAccessDenied, true, []string{"access denied to s3:ListBucket:"}},
		{"expired token", opErr(400, &smithy.GenericAPIError{Code: "ExpiredToken", Message: "The provided token has expired."}),
			awsconfig.KindExpired, true, []string{"expired (ExpiredToken)"}},
		{"request expired", opErr(403, &smithy.GenericAPIError{Code: "RequestExpired"}), awsconfig.KindExpired, true, []string{"RequestExpired", "clock"}},
		{"bad key", opErr(403, &smithy.GenericAPIError{Code: "InvalidAccessKeyId"}), awsconfig.KindRejected, true, []string{"rejected by S3 (InvalidAccessKeyId)"}},
		{"bad secret", opErr(403, &smithy.GenericAPIError{Code: "SignatureDoesNotMatch"}), awsconfig.KindRejected, true, []string{"SignatureDoesNotMatch"}},
		{"no credentials", listCtx(&smithy.OperationError{ServiceID: "S3", OperationName: "ListObjectsV2", Err: fmt.Errorf("get identity: get credentials: %w", noCreds)}),
			awsconfig.KindNoCredentials, true, []string{"list s3://b/", "no AWS credentials found", "access disabled to EC2 IMDS"}},
		{"unknown profile", fmt.Errorf("load AWS configuration: %w", config.SharedConfigProfileNotExistError{Profile: "ops", Filename: []string{"/home/u/.aws/config"}}),
			awsconfig.KindUnknownProfile, true, []string{`AWS profile "ops"`, "/home/u/.aws/config"}},
		{"connection refused", listCtx(sendErr("http://127.0.0.1:1/b?list-type=2", refused)), awsconfig.KindUnreachable, false,
			[]string{"cannot reach the AWS endpoint http://127.0.0.1:1 (S3): connection refused"}},
		{"Lambda unreachable names its own variable", &smithy.OperationError{ServiceID: "Lambda", OperationName: "GetFunctionConfiguration", Err: &smithyhttp.RequestSendError{
			Err: &url.Error{Op: "Get", URL: "http://127.0.0.1:9/2015-03-31/functions/f", Err: refused}}}, awsconfig.KindUnreachable, false,
			[]string{"(Lambda): connection refused", "check AWS_ENDPOINT_URL_LAMBDA, AWS_ENDPOINT_URL and the network (--endpoint-url does not apply to Lambda)"}},
		{"wrong region (header malformed)", listCtx(opErr(400, &smithy.GenericAPIError{Code: "AuthorizationHeaderMalformed",
			Message: "The authorization header is malformed; the region 'us-east-1' is wrong; expecting 'eu-west-1'"})),
			awsconfig.KindWrongRegion, false, []string{"list s3://b/", "another region", "(AuthorizationHeaderMalformed)", "it is in eu-west-1", "--region eu-west-1"}},
		{"wrong region (301 without a body)", redirect("us-west-2"), awsconfig.KindWrongRegion, false, []string{"another region", "it is in us-west-2"}},
		{"slow down", opErr(503, &smithy.GenericAPIError{Code: "SlowDown", Message: "Please reduce your request rate."}),
			awsconfig.KindThrottled, false, []string{"S3 is throttling", "(SlowDown)", "--concurrency"}},
		{"clock skew", opErr(403, &smithy.GenericAPIError{Code: "RequestTimeTooSkewed", Message: "The difference between the request time and the current time is too large."}),
			awsconfig.KindClockSkew, false, []string{"clock", "(RequestTimeTooSkewed)", "NTP"}},
		{"no such queue", &smithy.OperationError{ServiceID: "SQS", OperationName: "ReceiveMessage", Err: &smithy.GenericAPIError{Code: "AWS.SimpleQueueService.NonExistentQueue", Message: "The specified queue does not exist."}},
			awsconfig.KindNoQueue, false, []string{"queue does not exist"}},
		{"dns", sendErr("https://s3.nowhere.invalid/b", &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Name: "s3.nowhere.invalid", Err: "no such host", IsNotFound: true}}),
			awsconfig.KindUnreachable, false, []string{"https://s3.nowhere.invalid", "does not resolve"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, ok := awsconfig.Explain(c.err)
			if !ok || e.Kind != c.kind || e.Auth != c.auth {
				t.Fatalf("Explain = %+v, %v; want kind %q auth %v", e, ok, c.kind, c.auth)
			}
			if strings.Contains(e.Message, "\n") || strings.Contains(e.Message, "operation error") || strings.Contains(e.Message, "REQ123") {
				t.Errorf("not one plain line: %q", e.Message)
			}
			for _, w := range c.wants {
				if !strings.Contains(e.Message, w) {
					t.Errorf("message %q lacks %q", e.Message, w)
				}
			}
			if got := awsconfig.IsAuthError(c.err); got != c.auth {
				t.Errorf("IsAuthError = %v, want %v", got, c.auth)
			}
		})
	}
	for _, err := range []error{errors.New("something else"), opErr(500, &smithy.GenericAPIError{Code: "InternalError"})} {
		if e, ok := awsconfig.Explain(err); ok {
			t.Errorf("Explain(%v) = %+v: only the common failures are rewritten", err, e)
		}
	}
}

// redirect is S3's answer to a HEAD of a bucket in another region: a 301
// with no body, the region in a header.
func redirect(region string) error {
	h := http.Header{}
	h.Set("X-Amz-Bucket-Region", region)
	return &smithy.OperationError{ServiceID: "S3", OperationName: "HeadObject", Err: &awshttp.ResponseError{
		RequestID: "REQ123",
		ResponseError: &smithyhttp.ResponseError{
			Response: &smithyhttp.Response{Response: &http.Response{StatusCode: 301, Header: h}},
			Err:      errors.New("http response error StatusCode: 301"),
		},
	}}
}

// Every AWS component the tools call, under every fault the SDK reports:
// one line, naming the component (its name, or its IAM action), without
// the operation chain or a request id, with the exit class the docs give
// (credentials and permissions: exit 4; the rest: 1).
func TestEveryComponentUnderEveryFaultIsOneLine(t *testing.T) {
	services := []struct{ id, op, name, action string }{
		{"S3", "GetObject", "S3", "s3:GetObject"},
		{"SQS", "ReceiveMessage", "SQS", "sqs:ReceiveMessage"},
		{"SNS", "Publish", "SNS", "sns:Publish"},
		{"SFN", "DescribeExecution", "Step Functions", "states:DescribeExecution"},
		{"Secrets Manager", "GetSecretValue", "Secrets Manager", "secretsmanager:GetSecretValue"},
		{"Athena", "StartQueryExecution", "Athena", "athena:StartQueryExecution"},
		{"Lambda", "UpdateEventSourceMapping", "Lambda", "lambda:UpdateEventSourceMapping"},
	}
	answer := func(id, op string, status int, code string) error {
		return &smithy.OperationError{ServiceID: id, OperationName: op, Err: &awshttp.ResponseError{RequestID: "REQ123",
			ResponseError: &smithyhttp.ResponseError{Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status}},
				Err: &smithy.GenericAPIError{Code: code, Message: "m"}}}}
	}
	send := func(id, op string, cause error) error {
		return &smithy.OperationError{ServiceID: id, OperationName: op, Err: &smithyhttp.RequestSendError{
			Err: &url.Error{Op: "Post", URL: "https://svc.example.com/", Err: cause}}}
	}
	for _, s := range services {
		faults := []struct {
			name string
			err  error
			auth bool
			want string
		}{
			{"refused", send(s.id, s.op, &net.OpError{Op: "dial", Net: "tcp", Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}), false, "(" + s.name + "): connection refused"},
			{"dns", send(s.id, s.op, &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Name: "svc.example.com", Err: "no such host", IsNotFound: true}}), false, "(" + s.name + "): the host name svc.example.com does not resolve"},
			{"bad credentials", answer(s.id, s.op, 403, "InvalidClientTokenId"), true, "rejected by " + s.name},
			{"access denied", answer(s.id, s.op, 403, "AccessDeniedException"), true, "to " + s.action},
			{"throttled", answer(s.id, s.op, 400, "ThrottlingException"), false, s.name + " is throttling"},
			{"clock skew", answer(s.id, s.op, 403, "RequestTimeTooSkewed"), false, "clock is too far from AWS's (" + s.name + ")"},
			{"missing resource", answer(s.id, s.op, 404, map[string]string{"S3": "NoSuchBucket", "SQS": "AWS.SimpleQueueService.NonExistentQueue",
				"SNS": "NotFound", "SFN": "ExecutionDoesNotExist", "Secrets Manager": "ResourceNotFoundException", "Athena": "ResourceNotFoundException",
				"Lambda": "ResourceNotFoundException"}[s.id]), false, map[string]string{"S3": "bucket does not exist", "SQS": "queue does not exist"}[s.id]},
		}
		for _, f := range faults {
			t.Run(s.name+"/"+f.name, func(t *testing.T) {
				e, ok := awsconfig.Explain(f.err)
				if f.want == "" { // any other service's missing resource
					f.want = "the " + s.name + " resource named in the request does not exist"
				}
				if !ok || e.Auth != f.auth || !strings.Contains(e.Message, f.want) {
					t.Fatalf("Explain = %+v, %v; want auth %v and %q", e, ok, f.auth, f.want)
				}
				if strings.Contains(e.Message, "\n") || strings.Contains(e.Message, "operation error") || strings.Contains(e.Message, "REQ123") {
					t.Errorf("not one plain line: %q", e.Message)
				}
			})
		}
	}
}
