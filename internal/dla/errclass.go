package dla

import (
	"regexp"
	"strings"
)

var (
	reUUID     = regexp.MustCompile(`[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}`)
	reARN      = regexp.MustCompile(`arn:aws[a-zA-Z-]*:[^\s"',)]+`)
	reDottedID = regexp.MustCompile(`\b[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+){2,}\b`)
	reJSONStr  = regexp.MustCompile(`(":\s*)"(?:[^"\\]|\\.)*"`)
	reCollID   = regexp.MustCompile(`\b[A-Za-z0-9_-]+___[A-Za-z0-9._-]+`)
	reNumber   = regexp.MustCompile(`\b\d+\b`)
	reSpaces   = regexp.MustCompile(`\s+`)
)

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

// ErrorClass groups errors that differ only in ids and numbers: the headline
// (for an AggregateError, joined with its first inner error) with UUIDs, ARNs,
// collection ids, granule-like dotted ids, JSON string values and numbers replaced by
// placeholders. An empty error has the class "".
func ErrorClass(errText string) string {
	head := Headline(errText)
	head = reUUID.ReplaceAllString(head, "<uuid>")
	head = reARN.ReplaceAllString(head, "<arn>")
	head = reCollID.ReplaceAllString(head, "<collection>")
	head = reDottedID.ReplaceAllString(head, "<id>")
	head = reJSONStr.ReplaceAllString(head, `${1}"<v>"`)
	head = reNumber.ReplaceAllString(head, "<n>")
	return reSpaces.ReplaceAllString(head, " ")
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
