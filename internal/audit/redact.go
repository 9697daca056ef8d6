package audit

import (
	"net/url"
	"regexp"
	"strings"
)

// Redacted stands where a secret was.
const Redacted = "REDACTED"

// secretFlag names a flag whose value is a secret itself (a token, a
// password); the name of a secret (--db-secret, --token-file) is not one,
// and stays.
var secretFlag = regexp.MustCompile(`(?i)^--?[a-z0-9-]*(password|passwd|token|secret-value|api-key|apikey|credential)$`)

// connPassword is the password=... of a key=value connection string.
var connPassword = regexp.MustCompile(`(?i)(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s]*)`)

// RedactArgv is argv with every secret replaced by REDACTED: the password
// of a URL (postgres://user:pw@host), the password= of a connection
// string, the value of a flag that holds a token or a password (in either
// --flag value or --flag=value form), and an AWS secret parameter.
func RedactArgv(argv []string) []string {
	out := make([]string, len(argv))
	for i := 0; i < len(argv); i++ {
		w := argv[i]
		if name, _, ok := strings.Cut(w, "="); ok && strings.HasPrefix(name, "-") && secretFlag.MatchString(name) {
			out[i] = name + "=" + Redacted
			continue
		}
		out[i] = RedactText(w)
		if secretFlag.MatchString(w) && i+1 < len(argv) {
			i++
			out[i] = Redacted
		}
	}
	return out
}

// RedactText is one word or line with the passwords of URLs and
// connection strings in it replaced.
func RedactText(s string) string {
	s = connPassword.ReplaceAllString(s, "${1}"+Redacted)
	if !strings.Contains(s, "@") || !strings.Contains(s, "://") {
		return s
	}
	// A word may be --flag=URL: redact the URL part.
	prefix := ""
	if i := strings.Index(s, "="); i >= 0 && i < strings.Index(s, "://") {
		prefix, s = s[:i+1], s[i+1:]
	}
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		// Not a URL Go reads: cut any user:password@ by hand.
		if at := strings.LastIndex(s, "@"); at > 0 {
			if sch := strings.Index(s, "://"); sch >= 0 && sch < at {
				if colon := strings.Index(s[sch+3:at], ":"); colon >= 0 {
					return prefix + s[:sch+3+colon+1] + Redacted + s[at:]
				}
			}
		}
		return prefix + s
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), Redacted)
	}
	return prefix + u.String()
}
