package awsconfig

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"
	"syscall"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials/ssocreds"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// CredentialsError is a failure of the credential chain to produce
// credentials (none configured, an instance role that cannot be reached,
// an SSO session that expired, an assume-role call that was refused).
type CredentialsError struct {
	Profile string // the profile in use ("" for the default chain)
	Err     error
}

func (e *CredentialsError) Error() string { return "get AWS credentials: " + e.Err.Error() }
func (e *CredentialsError) Unwrap() error { return e.Err }

// credentialsErrors marks the errors of a credentials provider as
// *CredentialsError, so that they can be told apart from a request's own
// failure without reading the SDK's message texts.
type credentialsErrors struct {
	next    aws.CredentialsProvider
	profile string
}

func (c credentialsErrors) Retrieve(ctx context.Context) (aws.Credentials, error) {
	creds, err := c.next.Retrieve(ctx)
	if err != nil && ctx.Err() == nil {
		return creds, &CredentialsError{Profile: c.profile, Err: err}
	}
	return creds, err
}

// Kinds of AWS failure that Explain recognises.
const (
	KindNoBucket       = "bucket missing"
	KindAccessDenied   = "access denied"
	KindRejected       = "credentials rejected"
	KindExpired        = "credentials expired"
	KindNoCredentials  = "no credentials"
	KindUnknownProfile = "unknown profile"
	KindUnreachable    = "endpoint unreachable"
	KindWrongRegion    = "wrong region"
	KindThrottled      = "throttled"
	KindClockSkew      = "clock skew"
	KindNoQueue        = "queue missing"
	KindNoResource     = "resource missing"
	KindInFlightLimit  = "in-flight limit"
)

// Explanation is the one-line form of a common AWS failure.
type Explanation struct {
	Kind    string
	Message string // one line, without the SDK's operation and request ids
	Auth    bool   // about credentials or permissions (exit 4)
}

var (
	noBucketCodes     = map[string]bool{"NoSuchBucket": true}
	accessDeniedCodes = map[string]bool{"AccessDenied": true, "AccessDeniedException": true, "KmsAccessDenied": true, "KMSAccessDenied": true, "KMS.AccessDeniedException": true, "AllAccessDisabled": true, "AuthorizationError": true, "NotAuthorized": true}
	wrongRegionCodes  = map[string]bool{"AuthorizationHeaderMalformed": true, "PermanentRedirect": true, "IllegalLocationConstraintException": true}
	throttleCodes     = map[string]bool{"SlowDown": true, "Throttling": true, "ThrottlingException": true, "ThrottledException": true,
		"RequestLimitExceeded": true, "TooManyRequestsException": true, "RequestThrottled": true, "RequestThrottledException": true}
	clockCodes      = map[string]bool{"RequestTimeTooSkewed": true}
	noResourceCodes = map[string]bool{"NotFound": true, "NotFoundException": true, "ResourceNotFoundException": true,
		"ExecutionDoesNotExist": true, "StateMachineDoesNotExist": true, "EntityNotFoundException": true}
	noQueueCodes  = map[string]bool{"AWS.SimpleQueueService.NonExistentQueue": true, "QueueDoesNotExist": true, "NonExistentQueue": true}
	expiredCodes  = map[string]bool{"ExpiredToken": true, "ExpiredTokenException": true, "RequestExpired": true, "TokenRefreshRequired": true}
	rejectedCodes = map[string]bool{
		"InvalidAccessKeyId": true, "SignatureDoesNotMatch": true, "InvalidClientTokenId": true,
		"UnrecognizedClientException": true, "InvalidToken": true, "AuthFailure": true,
		"MissingAuthenticationToken": true, "InvalidSecurity": true, "IncompleteSignature": true,
		"XAdminUserNotFound": true, // versitygw's answer to an unknown access key id
	}
)

// Explain maps the common AWS failures to one line each: a missing bucket,
// access denied, credentials rejected or expired, no credentials, an
// unknown profile, and an endpoint that cannot be reached. The line keeps
// the context this program added (such as "list s3://bucket/prefix") and
// drops the SDK's operation chain and request ids. ok is false for any
// other error, which is then best shown as it is.
func Explain(err error) (Explanation, bool) {
	if err == nil {
		return Explanation{}, false
	}
	if pe, ok := profileNotExist(err); ok {
		files := ""
		if len(pe.Filename) > 0 {
			files = " (" + strings.Join(pe.Filename, ", ") + ")"
		}
		return Explanation{Kind: KindUnknownProfile, Auth: true, Message: fmt.Sprintf(
			"AWS profile %q is not in the shared config or credentials files%s; check --profile and AWS_PROFILE, or run 'aws configure list-profiles'",
			pe.Profile, files)}, true
	}
	prefix := contextOf(err)
	var ce *CredentialsError
	inChain := errors.As(err, &ce)
	if IsInFlightLimit(err) {
		return Explanation{Kind: KindInFlightLimit, Message: prefix + "SQS's in-flight limit was reached (OverLimit): a queue lets about 120,000 messages (20,000 for FIFO) be received and not yet deleted or released at once"}, true
	}
	var rm *RegionMismatchError
	if errors.As(err, &rm) && !inChain {
		return Explanation{Kind: KindWrongRegion, Message: prefix + rm.explain(throttler(err))}, true
	}
	if code, _ := apiCode(err); code == "InvalidAddress" {
		// SQS's answer to a queue URL of another region.
		what := "the SQS queue is in another region than the one in use (InvalidAddress)"
		if r := queueRegion(err); r != "" {
			what += ": it is in " + r + "; pass --region " + r + " or set AWS_REGION"
		} else {
			what += "; pass its region with --region or AWS_REGION"
		}
		return Explanation{Kind: KindWrongRegion, Message: prefix + what}, true
	}
	if code, _ := apiCode(err); (code == "InvalidSignatureException" || code == "SignatureDoesNotMatch") && scopedToRegion(err) {
		// A request signed for another region than the endpoint's.
		return Explanation{Kind: KindWrongRegion, Message: prefix + "the endpoint in use serves another region than the one the request was signed for" + serviceNote(err) +
			" (" + code + "); pass the endpoint's region with --region or AWS_REGION, or check --endpoint-url"}, true
	}
	if code, _ := apiCode(err); signatureExpired(err) && (rejectedCodes[code] || code == "InvalidSignatureException") {
		// The JSON and query services report a skewed clock as a bad
		// signature whose message says "Signature expired".
		return Explanation{Kind: KindClockSkew, Message: prefix + "this machine's clock is too far from AWS's" + serviceNote(err) + " (" + code +
			": signature expired): AWS refuses a request signed more than 5 minutes off; set the clock right (NTP) and run again"}, true
	}
	if code, _ := apiCode(err); wrongRegionCodes[code] || (code == "" && httpStatus(err) == 301) {
		what := "the S3 bucket is in another region than the one in use"
		if code != "" {
			what += " (" + code + ")"
		}
		if r := bucketRegion(err); r != "" {
			what += ": it is in " + r + "; pass --region " + r + " or set AWS_REGION"
		} else {
			what += "; pass its region with --region or AWS_REGION"
		}
		return Explanation{Kind: KindWrongRegion, Message: prefix + what}, true
	}
	if code, ok := apiCode(err); ok && noResourceCodes[code] && serviceNote(err) != " (S3)" {
		what := "the " + throttler(err) + " resource"
		var ae smithy.APIError
		if errors.As(err, &ae) && ae.ErrorMessage() != "" {
			what += " named in the request"
			return Explanation{Kind: KindNoResource, Message: prefix + what + " does not exist (" + code + ": " + strings.Join(strings.Fields(ae.ErrorMessage()), " ") + "); check its name or ARN"}, true
		}
		return Explanation{Kind: KindNoResource, Message: prefix + what + " does not exist (" + code + "); check its name or ARN"}, true
	}
	if code, ok := apiCode(err); ok && (throttleCodes[code] || clockCodes[code] || noQueueCodes[code]) {
		switch {
		case throttleCodes[code]:
			return Explanation{Kind: KindThrottled, Message: prefix + throttler(err) + " is throttling the requests (" + code +
				") and the SDK's retries ran out; wait and run again, or lower --concurrency"}, true
		case clockCodes[code]:
			return Explanation{Kind: KindClockSkew, Message: prefix + "this machine's clock is too far from AWS's" + serviceNote(err) + " (" + code +
				"): AWS refuses a request signed more than 15 minutes off; set the clock right (NTP) and run again"}, true
		default:
			return Explanation{Kind: KindNoQueue, Message: prefix + "the SQS queue does not exist (" + code + "); check the queue URL or name"}, true
		}
	}
	if code, ok := apiCode(err); ok {
		msg := ""
		e := Explanation{Auth: true}
		switch {
		case noBucketCodes[code]:
			e = Explanation{Kind: KindNoBucket, Message: "the S3 bucket does not exist (NoSuchBucket); check the bucket name in --archive"}
		case accessDeniedCodes[code] || (code == "" && httpStatus(err) == 403):
			e.Kind, msg = KindAccessDenied, "access denied"
			if code != "" {
				msg += " (" + code + ")"
			}
			if action := iamAction(err); action != "" {
				msg += " to " + action
			}
			e.Message = msg + ": the credentials in use" + profileNote(ce) + " are not allowed to do this; check the profile, the role's policy and the policy of the resource it names (and of its KMS key, if any); docs/permissions.md lists what each command needs"
		case expiredCodes[code]:
			e.Kind = KindExpired
			e.Message = "the AWS credentials have expired (" + code + "); refresh them (for example 'aws sso login'" + profileFlag(ce) + ", or new session credentials) and check the system clock"
		case rejectedCodes[code]:
			e.Kind = KindRejected
			e.Message = "the AWS credentials were rejected" + byService(err) + " (" + code + "); check AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN or the profile" + profileNote(ce)
		default:
			return Explanation{}, false
		}
		e.Message = prefix + e.Message
		return e, true
	}
	var ite *ssocreds.InvalidTokenError
	if errors.As(err, &ite) {
		return Explanation{Kind: KindExpired, Auth: true, Message: prefix +
			"the AWS SSO session has expired or is invalid; run 'aws sso login" + profileFlag(ce) + "'"}, true
	}
	if inChain {
		return Explanation{Kind: KindNoCredentials, Auth: true, Message: prefix + "no AWS credentials found" + profileNote(ce) +
			": pass --profile or set AWS_PROFILE, set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or run where an instance or task role is available (last tried: " + lastTried(ce.Err) + ")"}, true
	}
	if host, why, ok := unreachable(err); ok {
		if host != "" {
			host = " " + host
		}
		return Explanation{Kind: KindUnreachable, Message: prefix + "cannot reach the AWS endpoint" + host + serviceNote(err) + ": " + why + "; " + endpointHint(err)}, true
	}
	return Explanation{}, false
}

// profileNotExist finds the SDK's unknown-profile error, which it returns
// as a value.
func profileNotExist(err error) (config.SharedConfigProfileNotExistError, bool) {
	var v config.SharedConfigProfileNotExistError
	if errors.As(err, &v) {
		return v, true
	}
	var p *config.SharedConfigProfileNotExistError
	if errors.As(err, &p) && p != nil {
		return *p, true
	}
	return v, false
}

// apiCode is the error code of the service's answer, or "" with ok for a
// bare HTTP 403 that carried no code.
func apiCode(err error) (string, bool) {
	var ae smithy.APIError
	if errors.As(err, &ae) && ae.ErrorCode() != "" {
		return ae.ErrorCode(), true
	}
	if httpStatus(err) == 403 {
		return "", true
	}
	return "", false
}

func httpStatus(err error) int {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

// contextOf returns what this program wrapped around the SDK's operation
// error ("list s3://b/p: "), or "" when it added nothing.
func contextOf(err error) string {
	for _, target := range []error{asOp(err), asCreds(err)} {
		if target == nil {
			continue
		}
		full, inner := err.Error(), target.Error()
		if prefix, ok := strings.CutSuffix(full, inner); ok && prefix != "" {
			return prefix
		}
	}
	return ""
}

func asOp(err error) error {
	var oe *smithy.OperationError
	if errors.As(err, &oe) {
		return oe
	}
	return nil
}

func asCreds(err error) error {
	var ce *CredentialsError
	if errors.As(err, &ce) {
		return ce
	}
	return nil
}

func profileNote(ce *CredentialsError) string {
	if ce == nil || ce.Profile == "" {
		return ""
	}
	return fmt.Sprintf(" (profile %s)", ce.Profile)
}

func profileFlag(ce *CredentialsError) string {
	if ce == nil || ce.Profile == "" {
		return ""
	}
	return " --profile " + ce.Profile
}

// lastTried says why the last link of the credential chain (usually the
// EC2 instance metadata service) gave nothing.
func lastTried(err error) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Sprintf("the EC2 instance metadata service did not answer within %s", IMDSTimeout)
	}
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err.Error()
		}
		err = next
	}
}

// unreachable recognises a request that never got an answer: the host
// refused the connection, its name did not resolve, or it did not answer.
func unreachable(err error) (host, why string, ok bool) {
	var se *smithyhttp.RequestSendError
	var dns *net.DNSError
	var ue *url.Error
	if errors.As(err, &ue) {
		if u, perr := url.Parse(ue.URL); perr == nil {
			host = u.Scheme + "://" + u.Host
		}
	}
	var ne net.Error
	switch {
	case errors.As(err, &dns):
		if host == "" {
			host = dns.Name
		}
		return host, "the host name " + dns.Name + " does not resolve", true
	case errors.Is(err, syscall.ECONNREFUSED):
		return host, "connection refused", true
	case errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.EHOSTUNREACH):
		return host, "no route to the host", true
	case errors.As(err, &se) && errors.As(err, &ne) && ne.Timeout():
		return host, "no answer (timed out)", true
	}
	return "", "", false
}

// iamActions are the IAM actions of the API operations whose names are
// not their actions.
var iamActions = map[string]string{
	"s3:ListObjectsV2": "s3:ListBucket", "s3:HeadObject": "s3:GetObject", "s3:DeleteObjects": "s3:DeleteObject",
	"s3:HeadBucket": "s3:ListBucket", "s3:CopyObject": "s3:GetObject and s3:PutObject",
	"sqs:SendMessageBatch": "sqs:SendMessage", "sqs:DeleteMessageBatch": "sqs:DeleteMessage",
	"sqs:ChangeMessageVisibilityBatch": "sqs:ChangeMessageVisibility",
}

// iamAction names the IAM action a failed call needed ("s3:GetObject"),
// from the SDK's service and operation; "" when the error names none.
func iamAction(err error) string {
	var oe *smithy.OperationError
	if !errors.As(err, &oe) || oe.OperationName == "" {
		return ""
	}
	service := strings.ToLower(strings.ReplaceAll(oe.ServiceID, " ", ""))
	if service == "sfn" {
		service = "states"
	}
	a := service + ":" + oe.OperationName
	if m, ok := iamActions[a]; ok {
		return m
	}
	return a
}

// bucketRegion is the bucket's region an S3 error names: the
// x-amz-bucket-region header of a redirect, or "expecting 'REGION'" in an
// AuthorizationHeaderMalformed message.
func bucketRegion(err error) string {
	var re *awshttp.ResponseError
	if errors.As(err, &re) && re.Response != nil && re.Response.Response != nil {
		if r := re.Response.Header.Get("X-Amz-Bucket-Region"); r != "" {
			return r
		}
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		if m := expectingRegion.FindStringSubmatch(ae.ErrorMessage()); m != nil {
			return m[1]
		}
	}
	return ""
}

var expectingRegion = regexp.MustCompile(`expecting '([a-z0-9-]+)'`)

// queueRegion is the region of the queue URL an SQS InvalidAddress
// message quotes ("The address https://sqs.eu-west-1.amazonaws.com/ is not
// valid for this endpoint.").
func queueRegion(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		if m := sqsHostRegion.FindStringSubmatch(ae.ErrorMessage()); m != nil {
			return m[1]
		}
	}
	return ""
}

var sqsHostRegion = regexp.MustCompile(`sqs\.([a-z]{2}(?:-[a-z]+)+-\d+)\.amazonaws\.com`)

// scopedToRegion reports a signature whose region is not the endpoint's.
func scopedToRegion(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && strings.Contains(ae.ErrorMessage(), "Credential should be scoped to a valid region")
}

// signatureExpired reports an answer whose message says the request's
// signature is too old or too new: the clock, not the credentials.
func signatureExpired(err error) bool {
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		return false
	}
	m := ae.ErrorMessage()
	return strings.Contains(m, "Signature expired") || strings.Contains(m, "Signature not yet current")
}

// serviceNames are the services' names as an operator knows them, by the
// SDK's service id.
var serviceNames = map[string]string{"SFN": "Step Functions", "Secrets Manager": "Secrets Manager"}

// serviceNote names the AWS service an error came from (" (S3)"), "" when
// it names none.
func serviceNote(err error) string {
	var oe *smithy.OperationError
	if !errors.As(err, &oe) || oe.ServiceID == "" {
		return ""
	}
	name := oe.ServiceID
	if n, ok := serviceNames[name]; ok {
		name = n
	}
	return " (" + name + ")"
}

// byService is " by S3" for an error of S3, "" when it names no service.
func byService(err error) string {
	if n := strings.Trim(serviceNote(err), " ()"); n != "" {
		return " by " + n
	}
	return ""
}

// throttler is the service that throttles ("S3"), or "AWS".
func throttler(err error) string {
	if n := strings.Trim(serviceNote(err), " ()"); n != "" {
		return n
	}
	return "AWS"
}

// endpointHint is what to check for an endpoint that cannot be reached:
// --endpoint-url, except for the services it never applies to (Lambda,
// which pushdlq processor sends to its own endpoint, and STS), whose own
// variable is named instead.
func endpointHint(err error) string {
	var oe *smithy.OperationError
	if errors.As(err, &oe) && (oe.ServiceID == ServiceLambda || oe.ServiceID == ServiceSTS) {
		return "check " + ServiceEndpointVar(oe.ServiceID) + ", AWS_ENDPOINT_URL and the network (--endpoint-url does not apply to " + oe.ServiceID + ")"
	}
	return "check --endpoint-url, AWS_ENDPOINT_URL and the network"
}
