package awsconfig

import (
	"fmt"
	"io"
	"regexp"

	"github.com/aws/smithy-go/logging"
)

// Redacted replaces a secret in the AWS debug log.
const Redacted = "[REDACTED]"

var (
	// secretHeader matches a request header line whose value is a secret:
	// the SigV4 Authorization header (its signature authenticates the
	// request), session and metadata tokens, and bearer tokens.
	secretHeader = regexp.MustCompile(`(?im)^((?:authorization|proxy-authorization|x-amz-security-token|x-aws-ec2-metadata-token|x-amz-sso_bearer_token)[ \t]*:)[^\r\n]*`)
	// secretParam matches a query-string parameter of a presigned URL that
	// carries the signature, the access key id or the session token.
	secretParam = regexp.MustCompile(`(?i)((?:^|[?&;\s])x-amz-(?:signature|credential|security-token)=)[^&;\s"'<>]*`)
)

// Redact removes the secrets from one AWS debug log entry: the values of
// the Authorization and token headers, and the signature, credential and
// token parameters of a presigned URL. The names stay, so the log still
// shows that a request was signed and carried a token.
func Redact(s string) string {
	s = secretHeader.ReplaceAllString(s, "${1} "+Redacted)
	return secretParam.ReplaceAllString(s, "${1}"+Redacted)
}

// redactingLogger writes the SDK's log entries with their secrets removed.
type redactingLogger struct{ next logging.Logger }

func (l redactingLogger) Logf(c logging.Classification, format string, v ...any) {
	l.next.Logf(c, "%s", Redact(fmt.Sprintf(format, v...)))
}

// sdkLogger is the SDK's logger: with --debug-aws its entries (requests,
// responses, retries, warnings) go to w with secrets redacted; without it
// the SDK logs nothing, so that its own warnings (such as "falling back to
// IMDSv1" off EC2) never reach an operator's terminal.
func sdkLogger(debug bool, w io.Writer) logging.Logger {
	if !debug {
		return logging.Nop{}
	}
	return redactingLogger{next: logging.NewStandardLogger(w)}
}
