package audit

import (
	"regexp"
	"strings"
)

// Redacted stands where a secret was.
const Redacted = "REDACTED"

// secretFlag names a flag whose value is a secret itself (a token, a
// password); the name of a secret (--db-secret, --token-file) is not one,
// and stays.
var secretFlag = regexp.MustCompile(`(?i)^--?[a-z0-9-]*(password|passwd|token|secret-value|api-key|apikey|credential)$`)

// secretKey is the key of a key=value pair whose value is a secret: the
// password= (also sslpassword=) of a connection string or a URL's query,
// a token=, access_token=, api_key=, client_secret= ... It starts a word
// or follows ?, &, ; or a comma, so that a flag's name (--db-secret=NAME)
// is not one.
var secretKey = regexp.MustCompile(`(?i)(?:^|[\s?&;,])[a-z0-9_.]*(?:password|passwd|pwd|token|secret|api[_-]?key|signature|credential)[a-z0-9_.-]*\s*=\s*`)

// RedactArgv is argv with every secret replaced by REDACTED: the password
// of a URL (postgres://user:pw@host), the password= of a connection
// string, the value of a flag that holds a token or a password (in either
// --flag value or --flag=value form), and an AWS secret parameter. Each
// word is one value: a URL's password is cut up to its last @, spaces and
// all.
func RedactArgv(argv []string) []string {
	out := make([]string, len(argv))
	for i := 0; i < len(argv); i++ {
		w := argv[i]
		if name, _, ok := strings.Cut(w, "="); ok && strings.HasPrefix(name, "-") && secretFlag.MatchString(name) {
			out[i] = name + "=" + Redacted
			continue
		}
		out[i] = redactURLs(redactKeyValues(w), true)
		if secretFlag.MatchString(w) && i+1 < len(argv) {
			i++
			out[i] = Redacted
		}
	}
	return out
}

// RedactText is one word or line (an error text) with the secrets in it
// replaced: a bearer token, the password of every URL in it (a URL of http or https with
// a user and no password: the user, a token), and the value of every
// password=, token= ... The rest of the text stays.
func RedactText(s string) string {
	if containsFoldASCII(s, "bearer") { // the regular expression only where it can match
		s = bearer.ReplaceAllString(s, "${1}"+Redacted)
	}
	return redactURLs(redactKeyValues(s), false)
}

// containsFoldASCII reports whether s holds word in any case (word is
// lower-case ASCII letters, none of which Unicode folds from another
// character).
func containsFoldASCII(s, word string) bool {
	for i := 0; i+len(word) <= len(s); i++ {
		if s[i]|0x20 == word[0] && strings.EqualFold(s[i:i+len(word)], word) {
			return true
		}
	}
	return false
}

// bearer is an HTTP Authorization header's token, quoted in an error.
var bearer = regexp.MustCompile(`(?i)(\bbearer\s+)[^\s"',;]+`)

// redactKeyValues replaces the value of each secret key=value: a quoted
// value ('a b', with \' inside) whole, an unquoted one up to a space (a
// backslash escapes the next character, as in libpq) or, in a URL's query
// (after ? or &), up to the next &.
func redactKeyValues(s string) string {
	if !strings.Contains(s, "=") {
		return s // every secret key=value has its =
	}
	locs := secretKey.FindAllStringIndex(s, -1)
	if locs == nil {
		return s
	}
	var b strings.Builder
	last := 0
	for _, l := range locs {
		if l[0] < last {
			continue // inside the value just redacted
		}
		query := l[0] < len(s) && (s[l[0]] == '?' || s[l[0]] == '&')
		b.WriteString(s[last:l[1]])
		b.WriteString(Redacted)
		last = valueEnd(s, l[1], query)
	}
	b.WriteString(s[last:])
	return b.String()
}

func valueEnd(s string, i int, query bool) int {
	if i < len(s) && s[i] == '\'' {
		for j := i + 1; j < len(s); j++ {
			switch s[j] {
			case '\\':
				j++
			case '\'':
				return j + 1
			}
		}
		return len(s)
	}
	for j := i; j < len(s); j++ {
		switch c := s[j]; {
		case c == '\\':
			j++
			if j >= len(s) {
				return len(s)
			}
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			return j
		case query && c == '&':
			return j
		}
	}
	return len(s)
}

// redactURLs replaces the password of each scheme://user:password@ in s.
// The user part runs to the last @ before the next "://" and, in a line
// (not one word), before the next space.
func redactURLs(s string, word bool) string {
	if !strings.Contains(s, "://") || !strings.Contains(s, "@") {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "://")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		scheme := strings.ToLower(s[strings.LastIndexFunc(s[:i], func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '+' || r == '.' || r == '-')
		})+1 : i])
		b.WriteString(s[:i+3])
		s = s[i+3:]
		end := len(s)
		if j := strings.Index(s, "://"); j >= 0 {
			end = j
		}
		if !word {
			if j := strings.IndexAny(s[:end], " \t\n\r"); j >= 0 {
				end = j
			}
		}
		at := strings.LastIndex(s[:end], "@")
		if at < 0 {
			continue
		}
		user := s[:at]
		switch c := strings.Index(user, ":"); {
		case c >= 0:
			b.WriteString(user[:c+1] + Redacted)
		case strings.HasPrefix(scheme, "http") && user != "" && !strings.ContainsAny(user, "/ \t"):
			b.WriteString(Redacted) // https://TOKEN@host
		default:
			b.WriteString(user)
		}
		s = s[at:]
	}
}
