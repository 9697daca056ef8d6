package dla

import (
	"regexp"
	"strings"
)

// The one place an error text is normalised: stats --by error, the
// report, the search and show views, triage and --error-class all group
// with ErrorClass, so a group one of them shows is the group another
// selects. In the spirit of Sentry's message parameterisation, the values
// that vary from one message to the next (ids, hashes, numbers, dates,
// quoted values) are masked and what names the failure is kept.
var (
	reUUID      = regexp.MustCompile(`[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}`)
	reARN       = regexp.MustCompile(`arn:aws[a-zA-Z-]*:[^\s"',)]+`)
	reURL       = regexp.MustCompile(`\b(?:https?|s3)://[^\s"',)]+`)
	reTimestamp = regexp.MustCompile(`\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?\b`)
	reHex       = regexp.MustCompile(`\b(?:0x)?[0-9a-fA-F]*[0-9][0-9a-fA-F]*[a-fA-F][0-9a-fA-F]*\b|\b(?:0x)?[0-9a-fA-F]*[a-fA-F][0-9a-fA-F]*[0-9][0-9a-fA-F]*\b`)
	reDottedID  = regexp.MustCompile(`\b[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+){2,}\b`)
	reJSONStr   = regexp.MustCompile(`(":\s*)"(?:[^"\\]|\\.)*"`)
	reCollID    = regexp.MustCompile(`\b[A-Za-z0-9_-]+___[A-Za-z0-9._-]+`)
	reNumber    = regexp.MustCompile(`\b\d+(?:\.\d+)?\b`)
	// reHTTPAhead ends where an HTTP status follows: "HTTP 503",
	// "HTTP/1.1 503", "status code 503", "StatusCode: 503",
	// "\"statusCode\":503", "status=503", "Response code 503".
	reHTTPAhead = regexp.MustCompile(`(?i)(?:\bHTTP(?:/\d(?:\.\d)?)?|\bstatus(?:[ _-]?code)?["']?\s*[:=]?|\bresponse code:?)\s*$`)
	reSpaces    = regexp.MustCompile(`\s+`)
	// reFrame is a stack frame line ("    at writeGranule (/var/task/index.js:226:11)").
	reFrame = regexp.MustCompile(`^\s*at\s`)
	// reTrailingLoc is a frame location at a line's end ("(/var/task/index.js:123:45)").
	reTrailingLoc = regexp.MustCompile(`\s*\((?:/|file:|node:|[A-Za-z]:\\)[^()]*:\d+:\d+\)\s*$`)
)

// maxClassLen bounds a signature: a huge error text (a message quoted in
// full) still groups, by its start.
const maxClassLen = 400

// Headline is the error's first line; for an AggregateError whose first
// line says nothing more, it is joined with its first inner error.
func Headline(errText string) string {
	lines := nonBlankLines(errText, 2)
	if len(lines) == 0 {
		return ""
	}
	head := lines[0]
	if strings.HasPrefix(head, "AggregateError") && strings.TrimSpace(strings.TrimPrefix(head, "AggregateError:")) == "" && len(lines) > 1 {
		head = "AggregateError: " + lines[1]
	}
	return head
}

// InnerErrors splits an error text into the errors it reports, without
// stack frames: an AggregateError's inner errors (each line of it that is
// not a frame), or the text's first line.
func InnerErrors(errText string) []string {
	var out []string
	aggregate := false
	for line := range strings.SplitSeq(errText, "\n") {
		t := strings.TrimSpace(line)
		if t == "" || reFrame.MatchString(line) {
			continue
		}
		t = reTrailingLoc.ReplaceAllString(t, "")
		if len(out) == 0 && !aggregate {
			if rest, ok := strings.CutPrefix(t, "AggregateError"); ok && (rest == "" || rest[0] == ':') {
				aggregate = true
				if rest = strings.TrimSpace(strings.TrimPrefix(rest, ":")); rest != "" {
					out = append(out, rest)
				}
				continue
			}
			out = append(out, t)
			break
		}
		out = append(out, t)
		if len(out) == 16 {
			break
		}
	}
	return out
}

// NoErrorText is how every verb names the error of an object that has
// none (its class ""): triage's groups, stats --by error, the report's
// classes and trace (issue 38).
const NoErrorText = "(no error text)"

// ErrorClass groups errors that differ only in ids and numbers. An
// AggregateError is "AggregateError: " and its distinct inner errors,
// joined with "; ", stack frames dropped; any other error is its first
// line. In each, UUIDs, ARNs, URLs, dates and times, collection ids,
// granule-like dotted ids, hex hashes, JSON string values and numbers are
// replaced by placeholders (an HTTP status keeps its number: 503 and 404
// are different failures). Bytes that are not UTF-8 become U+FFFD, and a
// class is at most 400 bytes. An empty error has the class "".
func ErrorClass(errText string) string {
	if strings.TrimSpace(errText) == "" {
		return ""
	}
	errText = strings.ToValidUTF8(errText, "\uFFFD")
	inner := InnerErrors(errText)
	aggregate := isAggregate(strings.TrimSpace(errText))
	seen := map[string]bool{}
	var parts []string
	for _, e := range inner {
		n := normalise(e)
		if n != "" && !seen[n] {
			seen[n] = true
			parts = append(parts, n)
		}
	}
	class := strings.Join(parts, "; ")
	if aggregate {
		class = strings.TrimSpace("AggregateError: " + class)
		if len(parts) == 0 {
			class = "AggregateError"
		}
	}
	if len(class) > maxClassLen {
		class = strings.ToValidUTF8(class[:maxClassLen], "") + "…"
	}
	return class
}

// unprintable is what a class never holds: control characters (a NUL
// cannot even be passed in a command's argument), bidi controls, line and
// paragraph separators. Each becomes U+FFFD.
func unprintable(r rune) bool {
	return (r < 0x20 && r != '\t') || r == 0x7f || (r >= 0x80 && r < 0xa0) ||
		(r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) || r == 0x200e || r == 0x200f || r == 0x061c ||
		r == 0x2028 || r == 0x2029
}

func normalise(s string) string {
	if strings.IndexFunc(s, unprintable) >= 0 {
		s = strings.Map(func(r rune) rune {
			if unprintable(r) {
				return '\uFFFD'
			}
			return r
		}, s)
	}
	s = reUUID.ReplaceAllString(s, "<uuid>")
	s = reARN.ReplaceAllString(s, "<arn>")
	s = reURL.ReplaceAllString(s, "<url>")
	s = reTimestamp.ReplaceAllString(s, "<date>")
	s = reCollID.ReplaceAllString(s, "<collection>")
	s = reDottedID.ReplaceAllString(s, "<id>")
	s = reJSONStr.ReplaceAllString(s, `${1}"<v>"`)
	s = reHex.ReplaceAllStringFunc(s, func(h string) string {
		if len(strings.TrimPrefix(h, "0x")) < 8 {
			return h // a short word (a class name like "Ab12") is not a hash
		}
		return "<hex>"
	})
	s = maskNumbers(s)
	return strings.TrimSpace(reSpaces.ReplaceAllString(s, " "))
}

// maskNumbers replaces numbers by "<n>", but for an HTTP status
// ("HTTP 503", "StatusCode: 404") and an HTTP version ("HTTP/1.1").
func maskNumbers(s string) string {
	locs := reNumber.FindAllStringIndex(s, -1)
	if locs == nil {
		return s
	}
	var b strings.Builder
	last := 0
	for _, l := range locs {
		b.WriteString(s[last:l[0]])
		num := s[l[0]:l[1]]
		before := s[max(0, l[0]-16):l[0]]
		if (len(num) == 3 && num[0] >= '1' && num[0] <= '5' && reHTTPAhead.MatchString(before)) || strings.HasSuffix(strings.ToUpper(before), "HTTP/") {
			b.WriteString(num)
		} else {
			b.WriteString("<n>")
		}
		last = l[1]
	}
	b.WriteString(s[last:])
	return b.String()
}

// isAggregate: the text starts with "AggregateError" as a word (then ":",
// a blank or the end), not "AggregateErrorX".
func isAggregate(s string) bool {
	rest, ok := strings.CutPrefix(s, "AggregateError")
	return ok && (rest == "" || rest[0] == ':' || rest[0] == ' ' || rest[0] == '\n' || rest[0] == '\r' || rest[0] == '\t')
}

func nonBlankLines(s string, limit int) []string {
	var out []string
	for line := range strings.SplitSeq(s, "\n") {
		if t := strings.TrimSpace(line); t != "" {
			out = append(out, t)
			if len(out) == limit {
				break
			}
		}
	}
	return out
}
