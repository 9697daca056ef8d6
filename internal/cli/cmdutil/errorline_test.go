package cmdutil_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/athena"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/deadletter/deadletter/internal/awsconfig"
	"github.com/deadletter/deadletter/internal/cli/cmdutil"
	"github.com/deadletter/deadletter/internal/cumulusapi"
	"github.com/deadletter/deadletter/internal/cumulusdb"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// The faults of the error table in docs/output-and-errors.md.
const (
	unreachable    = "unreachable"
	dnsFailure     = "DNS failure"
	refused        = "refused"
	badCredentials = "bad credentials"
	wrongRegion    = "wrong region"
	throttled      = "throttled"
	clockSkew      = "clock skew"
	missing        = "missing resource"
)

// answer is what a fake service says for one fault: the HTTP status, the
// error code and message, in the service's own protocol.
type answer struct {
	status        int
	code, message string
}

// awsComponent is one AWS service as the tools call it: the client the
// project builds (with its middlewares), one call, and the answers AWS
// gives for each fault (a protocol fake plays them; the SDK's own
// deserializers read them).
type awsComponent struct {
	name     string
	protocol string // restxml, query, json, restjson
	call     func(ctx context.Context, cfg aws.Config, s awsconfig.Settings, region string) error
	answers  map[string]answer
}

// skewed is the message AWS's JSON and query services give a request
// signed with a clock more than five minutes off.
const skewed = "Signature expired: 20261126T000000Z is now earlier than 20261126T001000Z (20261126T001500Z - 5 min.)"

// arnIn is an ARN of the service in a region; the wrong-region fault
// names a resource in eu-west-1 while the client is in us-east-1.
func arnIn(service, region, rest string) string {
	return "arn:aws:" + service + ":" + region + ":123456789012:" + rest
}

var awsComponents = []awsComponent{
	{name: "S3", protocol: "restxml",
		call: func(ctx context.Context, cfg aws.Config, s awsconfig.Settings, _ string) error {
			_, err := awsconfig.S3(cfg, s).GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("archive"), Key: aws.String("demo/dead-letter-archive/sqs/k.json")})
			return err
		},
		answers: map[string]answer{
			badCredentials: {403, "InvalidAccessKeyId", "The AWS Access Key Id you provided does not exist in our records."},
			wrongRegion:    {400, "AuthorizationHeaderMalformed", "The authorization header is malformed; the region 'us-east-1' is wrong; expecting 'eu-west-1'"},
			throttled:      {503, "SlowDown", "Please reduce your request rate."},
			clockSkew:      {403, "RequestTimeTooSkewed", "The difference between the request time and the current time is too large."},
			missing:        {404, "NoSuchBucket", "The specified bucket does not exist"},
		}},
	{name: "SQS", protocol: "json",
		call: func(ctx context.Context, cfg aws.Config, s awsconfig.Settings, region string) error {
			_, err := awsconfig.SQS(cfg, s).ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String("https://sqs." + region + ".amazonaws.com/123456789012/push-dlq")})
			return err
		},
		answers: map[string]answer{
			badCredentials: {403, "InvalidClientTokenId", "The security token included in the request is invalid."},
			wrongRegion:    {400, "InvalidAddress", "The address https://sqs.eu-west-1.amazonaws.com/ is not valid for this endpoint."},
			throttled:      {400, "RequestThrottled", "Rate exceeded"},
			clockSkew:      {403, "SignatureDoesNotMatch", skewed},
			missing:        {400, "QueueDoesNotExist", "The specified queue does not exist."},
		}},
	{name: "SNS", protocol: "query",
		call: func(ctx context.Context, cfg aws.Config, s awsconfig.Settings, region string) error {
			_, err := awsconfig.SNS(cfg, s).Publish(ctx, &sns.PublishInput{TopicArn: aws.String(arnIn("sns", region, "granule-topic")), Message: aws.String("{}")})
			return err
		},
		answers: map[string]answer{
			badCredentials: {403, "InvalidClientTokenId", "The security token included in the request is invalid."},
			wrongRegion:    {404, "NotFound", "Topic does not exist"},
			throttled:      {400, "Throttling", "Rate exceeded"},
			clockSkew:      {403, "SignatureDoesNotMatch", skewed},
			missing:        {404, "NotFound", "Topic does not exist"},
		}},
	{name: "Step Functions", protocol: "json",
		call: func(ctx context.Context, cfg aws.Config, s awsconfig.Settings, region string) error {
			_, err := awsconfig.SFN(cfg, s).DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(arnIn("states", region, "execution:IngestGranule:x"))})
			return err
		},
		answers: map[string]answer{
			badCredentials: {400, "UnrecognizedClientException", "The security token included in the request is invalid."},
			wrongRegion:    {400, "ExecutionDoesNotExist", "Execution Does Not Exist"},
			throttled:      {400, "ThrottlingException", "Rate exceeded"},
			clockSkew:      {400, "InvalidSignatureException", skewed},
			missing:        {400, "ExecutionDoesNotExist", "Execution Does Not Exist"},
		}},
	{name: "Secrets Manager", protocol: "json",
		call: func(ctx context.Context, cfg aws.Config, s awsconfig.Settings, region string) error {
			_, err := awsconfig.SecretText(ctx, awsconfig.SecretsManager(cfg, s), arnIn("secretsmanager", region, "secret:cumulus-db-AbCdEf"))
			return err
		},
		answers: map[string]answer{
			badCredentials: {400, "UnrecognizedClientException", "The security token included in the request is invalid."},
			wrongRegion:    {400, "ResourceNotFoundException", "Secrets Manager can't find the specified secret."},
			throttled:      {400, "ThrottlingException", "Rate exceeded"},
			clockSkew:      {400, "InvalidSignatureException", skewed},
			missing:        {400, "ResourceNotFoundException", "Secrets Manager can't find the specified secret."},
		}},
	{name: "Athena", protocol: "json",
		call: func(ctx context.Context, cfg aws.Config, s awsconfig.Settings, _ string) error {
			_, err := awsconfig.Athena(cfg, s).StartQueryExecution(ctx, &athena.StartQueryExecutionInput{QueryString: aws.String("SELECT 1"), WorkGroup: aws.String("primary")})
			return err
		},
		answers: map[string]answer{
			badCredentials: {400, "UnrecognizedClientException", "The security token included in the request is invalid."},
			// Athena names no resource by ARN; a client signing for
			// another region than the endpoint's is told this:
			wrongRegion: {400, "InvalidSignatureException", "Credential should be scoped to a valid region. "},
			throttled:   {400, "TooManyRequestsException", "Rate exceeded"},
			clockSkew:   {400, "InvalidSignatureException", skewed},
			missing:     {400, "ResourceNotFoundException", "WorkGroup is not found."},
		}},
	{name: "Lambda", protocol: "restjson",
		call: func(ctx context.Context, cfg aws.Config, s awsconfig.Settings, region string) error {
			_, err := awsconfig.Lambda(cfg, s).GetFunctionConfiguration(ctx, &lambda.GetFunctionConfigurationInput{FunctionName: aws.String(arnIn("lambda", region, "function:push-dlq"))})
			return err
		},
		answers: map[string]answer{
			badCredentials: {403, "UnrecognizedClientException", "The security token included in the request is invalid."},
			wrongRegion:    {404, "ResourceNotFoundException", "Function not found"},
			throttled:      {429, "TooManyRequestsException", "Rate exceeded"},
			clockSkew:      {403, "InvalidSignatureException", skewed},
			missing:        {404, "ResourceNotFoundException", "Function not found"},
		}},
}

// fakeAWS answers every request with one error in the protocol's form,
// with a request id that must never reach the operator.
func fakeAWS(t *testing.T, protocol string, a answer) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Amzn-RequestId", "REQ-4711")
		w.Header().Set("X-Amz-Request-Id", "REQ-4711")
		switch protocol {
		case "restxml":
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(a.status)
			fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>%s</Message><RequestId>REQ-4711</RequestId></Error>`, a.code, a.message)
		case "query":
			w.Header().Set("Content-Type", "text/xml")
			w.WriteHeader(a.status)
			fmt.Fprintf(w, `<ErrorResponse><Error><Type>Sender</Type><Code>%s</Code><Message>%s</Message></Error><RequestId>REQ-4711</RequestId></ErrorResponse>`, a.code, a.message)
		case "restjson":
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("X-Amzn-ErrorType", a.code)
			w.WriteHeader(a.status)
			fmt.Fprintf(w, `{"Type":"User","message":%q}`, a.message)
		default:
			w.Header().Set("Content-Type", "application/x-amz-json-1.0")
			w.WriteHeader(a.status)
			fmt.Fprint(w, testsupport.AWSJSONError("com.amazonaws.service#"+a.code, a.message))
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// unresolvable is a host name that never resolves (RFC 6761).
const unresolvable = "deadletter-fault.invalid"

// checkLine asserts the operator's line for err: one line, naming the
// component and the fault, no operation chain, no request id, and the
// exit code the docs give.
func checkLine(t *testing.T, err error, component string, wants []string, exit int) {
	t.Helper()
	if err == nil {
		t.Fatal("the call did not fail")
	}
	line := cmdutil.ErrorLine(err)
	t.Logf("%s", line)
	if strings.ContainsAny(line, "\n\r") {
		t.Errorf("not one line: %q", line)
	}
	if !strings.Contains(line, component) {
		t.Errorf("the line does not name %s: %q", component, line)
	}
	for _, w := range wants {
		if !strings.Contains(line, w) {
			t.Errorf("the line lacks %q: %q", w, line)
		}
	}
	for _, leak := range []string{"operation error", "REQ-4711", "RequestID", "https response error", "api error"} {
		if strings.Contains(line, leak) {
			t.Errorf("the SDK's chain leaks (%q): %q", leak, line)
		}
	}
	if got := cmdutil.ExitCode(err); got != exit {
		t.Errorf("exit code %d, want %d (%q)", got, exit, line)
	}
}

// Every AWS component the tools call, under every fault: the project's
// own client, the SDK's own deserializers, a fake speaking the service's
// protocol (or no server at all), and the line ErrorLine prints.
func TestEveryAWSComponentUnderEveryFaultIsOneLineNamingIt(t *testing.T) {
	wantOf := map[string]struct {
		wants []string
		exit  int
	}{
		unreachable:    {[]string{"cannot reach the AWS endpoint", "no answer (timed out)"}, 1},
		dnsFailure:     {[]string{"cannot reach the AWS endpoint", "does not resolve"}, 1},
		refused:        {[]string{"cannot reach the AWS endpoint", "connection refused"}, 1},
		badCredentials: {[]string{"credentials were rejected"}, 4},
		wrongRegion:    {[]string{"another region", "--region"}, 1},
		throttled:      {[]string{"is throttling"}, 1},
		clockSkew:      {[]string{"clock is too far from AWS's"}, 1},
		missing:        {[]string{"does not exist"}, 1},
	}
	for _, c := range awsComponents {
		for _, fault := range []string{unreachable, dnsFailure, refused, badCredentials, wrongRegion, throttled, clockSkew, missing} {
			t.Run(c.name+"/"+fault, func(t *testing.T) {
				region := "us-east-1"
				var endpoint string
				switch fault {
				case unreachable:
					endpoint = "http://" + testsupport.Blackhole(t)
				case dnsFailure:
					endpoint = "http://" + unresolvable
				case refused:
					endpoint = "http://" + testsupport.ClosedPort(t)
				default:
					a, ok := c.answers[fault]
					if !ok {
						t.Fatalf("no answer for %s", fault)
					}
					endpoint = fakeAWS(t, c.protocol, a)
					if fault == wrongRegion {
						region = "eu-west-1" // the resource's; the client stays in us-east-1
					}
				}
				// A fake that answers may be slow to on a loaded machine
				// (it answered one 300 ms too late, "timed out"); only
				// the endpoint that never answers is waited for briefly.
				timeout := 5 * time.Second
				if fault == unreachable {
					timeout = 300 * time.Millisecond
				}
				cfg := aws.Config{
					Region:      "us-east-1",
					Credentials: credentials.NewStaticCredentialsProvider("AKIAFAULT", "secret", ""),
					HTTPClient:  awsconfig.HTTPClient().WithTimeout(timeout),
					Retryer:     func() aws.Retryer { return aws.NopRetryer{} },
				}
				err := c.call(context.Background(), cfg, awsconfig.Settings{EndpointURL: endpoint}, region)
				w := wantOf[fault]
				wants := w.wants
				if fault == wrongRegion && c.name != "Athena" {
					wants = append(wants, "eu-west-1", "--region eu-west-1")
				}
				checkLine(t, err, c.name, wants, w.exit)
			})
		}
	}
}

// The Cumulus API (dla recover --via-api): every fault that applies to it
// (it is not signed, so no region or clock) names it in one line.
func TestCumulusAPIUnderEveryFaultIsOneLineNamingIt(t *testing.T) {
	answering := func(status int, body string) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(status)
			fmt.Fprint(w, body)
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	for _, c := range []struct {
		fault string
		url   func() string
		wants []string
	}{
		{unreachable, func() string { return "http://" + testsupport.Blackhole(t) }, []string{"cannot reach the Cumulus API", "no answer (timed out)", "nothing was staged"}},
		{dnsFailure, func() string { return "http://" + unresolvable }, []string{"cannot reach the Cumulus API", "does not resolve"}},
		{refused, func() string { return "http://" + testsupport.ClosedPort(t) }, []string{"cannot reach the Cumulus API", "connection refused"}},
		{badCredentials, func() string { return answering(401, `{"message":"Invalid Authorization token"}`) }, []string{"the Cumulus API refused the token", "--token-file"}},
		{throttled, func() string { return answering(429, `{"message":"Too Many Requests"}`) }, []string{"the Cumulus API is throttling"}},
		{missing, func() string { return answering(404, `{"message":"Not Found"}`) }, []string{"the Cumulus API has no such resource", "--via-api"}},
		{"server error", func() string { return answering(502, `{"message":"Internal server error"}`) }, []string{"the Cumulus API answered HTTP 502"}},
	} {
		t.Run(c.fault, func(t *testing.T) {
			client := &cumulusapi.Client{BaseURL: c.url(), Token: "tok", HTTP: &http.Client{Timeout: 300 * time.Millisecond}, Attempts: 2, Backoff: time.Millisecond}
			err := client.Check(context.Background())
			if err != nil {
				// As dla recover --via-api reports a failed check.
				err = fmt.Errorf("%w; nothing was staged", err)
			}
			checkLine(t, err, "Cumulus API", c.wants, 1)
		})
	}
}

// PostgreSQL (dla recover, the db-writer): the faults of a connection,
// with a real server for the refusals only a server can give.
func TestPostgreSQLUnderEveryFaultIsOneLineNamingIt(t *testing.T) {
	open := func(url string) error {
		cfg, err := pgxpool.ParseConfig(url)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		d, err := cumulusdb.Open(ctx, cfg)
		if err == nil {
			d.Close()
		}
		return err
	}
	for _, c := range []struct {
		fault string
		url   func(t *testing.T) string
		wants []string
	}{
		{unreachable, func(t *testing.T) string {
			return "postgres://u:p@" + testsupport.Blackhole(t) + "/cumulus?connect_timeout=1&sslmode=disable"
		}, []string{"cannot connect to PostgreSQL at 127.0.0.1", "timed out"}},
		{dnsFailure, func(t *testing.T) string { return "postgres://u:p@" + unresolvable + ":5432/cumulus?connect_timeout=2" }, []string{"cannot connect to PostgreSQL", "does not resolve"}},
		{refused, func(t *testing.T) string {
			return "postgres://u:p@" + testsupport.ClosedPort(t) + "/cumulus?connect_timeout=2"
		}, []string{"cannot connect to PostgreSQL", "connection refused"}},
		{badCredentials, func(t *testing.T) string {
			return withUserInfo(t, testsupport.DatabaseURL(t), "deadletter_no_such_role", "wrong")
		}, []string{"cannot connect to PostgreSQL", "SQLSTATE 28"}},
		{missing, func(t *testing.T) string {
			return withDatabase(t, testsupport.DatabaseURL(t), "deadletter_no_such_database")
		}, []string{"cannot connect to PostgreSQL", "deadletter_no_such_database", "SQLSTATE 3D000"}},
	} {
		t.Run(c.fault, func(t *testing.T) {
			checkLine(t, open(c.url(t)), "PostgreSQL", c.wants, 1)
		})
	}
}

// withUserInfo is a database URL with another user and password.
func withUserInfo(t *testing.T, raw, user, password string) string {
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(user, password)
	return u.String()
}

// withDatabase is a database URL naming another database.
func withDatabase(t *testing.T, raw, name string) string {
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}
