package audit

import (
	"context"
	"os"
	"os/user"
	"time"
)

// CallerIdentity returns the AWS caller's ARN and account (STS
// GetCallerIdentity, in the CLI).
type CallerIdentity func(ctx context.Context) (arn, account string, err error)

// WhoAmI is the actor of a run: the AWS caller identity where identity
// answers within a few seconds (else null, and why), the OS user and the
// host.
func WhoAmI(ctx context.Context, identity CallerIdentity, getenv func(string) string) Actor {
	a := Actor{OSUser: osUser(getenv)}
	a.Host, _ = os.Hostname()
	if identity == nil {
		a.AWSNote = "no AWS identity: this run uses no AWS credentials"
		return a
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	arn, account, err := identity(ctx)
	switch {
	case err != nil:
		a.AWSNote = "the AWS caller identity could not be had (sts:GetCallerIdentity): " + oneLine(RedactText(err.Error()))
	case arn == "":
		a.AWSNote = "sts:GetCallerIdentity answered no ARN"
	default:
		a.AWSARN, a.AWSAccount = &arn, &account
	}
	return a
}

func osUser(getenv func(string) string) string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	if getenv != nil {
		for _, v := range []string{"USER", "LOGNAME", "USERNAME"} {
			if s := getenv(v); s != "" {
				return s
			}
		}
	}
	return ""
}

func oneLine(s string) string {
	out := []rune{}
	for _, r := range s {
		if r == '\n' || r == '\r' || r == '\t' {
			r = ' '
		}
		out = append(out, r)
		if len(out) >= 300 {
			out = append(out, '…')
			break
		}
	}
	return string(out)
}

// Reason is the run's reason: the flag, else $DEADLETTER_REASON.
func Reason(flag string, getenv func(string) string) string {
	if flag != "" {
		return flag
	}
	if getenv != nil {
		return getenv("DEADLETTER_REASON")
	}
	return ""
}
