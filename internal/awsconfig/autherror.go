package awsconfig

import (
	"errors"
	"strings"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
)

var authCodes = map[string]bool{
	"AccessDenied": true, "AccessDeniedException": true, "InvalidAccessKeyId": true,
	"SignatureDoesNotMatch": true, "ExpiredToken": true, "ExpiredTokenException": true,
	"InvalidClientTokenId": true, "UnrecognizedClientException": true, "InvalidToken": true,
	"AuthFailure": true, "MissingAuthenticationToken": true, "RequestExpired": true,
	"InvalidSecurity": true, "NotAuthorized": true,
}

// IsAuthError reports whether err is about credentials or permissions:
// no credentials, an unknown profile, credentials rejected or expired,
// access denied.
func IsAuthError(err error) bool {
	if e, ok := Explain(err); ok {
		return e.Auth
	}
	if IsInFlightLimit(err) { // a 403 that is about a limit, not a permission
		return false
	}
	var ae smithy.APIError
	if errors.As(err, &ae) && authCodes[ae.ErrorCode()] {
		return true
	}
	var re *awshttp.ResponseError
	if errors.As(err, &re) && re.HTTPStatusCode() == 403 {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "failed to retrieve credentials") || strings.Contains(msg, "get credentials:") ||
		strings.Contains(msg, "no EC2 IMDS role found")
}

// inFlightLimitCodes are SQS's answer to a ReceiveMessage past the queue's
// in-flight limit (about 120,000 messages of a standard queue, 20,000 of
// a FIFO one, received and not yet deleted or made visible). It comes
// with HTTP 403.
var inFlightLimitCodes = map[string]bool{"OverLimit": true, "AWS.SimpleQueueService.OverLimit": true}

// IsInFlightLimit reports whether err is SQS's OverLimit.
func IsInFlightLimit(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && inFlightLimitCodes[ae.ErrorCode()]
}
