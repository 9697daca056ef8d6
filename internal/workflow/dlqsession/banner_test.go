package dlqsession

import (
	"fmt"
	"strings"
	"testing"

	"github.com/deadletter/deadletter/internal/sqsmove"
)

// The banner fits 80 columns: an identity with a local endpoint and the
// variable that set it puts the endpoint on a line of its own, and the
// receive-count note is folded for every verb (both wrapped by a word on
// an 80-column terminal, which the screen check lets pass as one word
// that cannot be cut). A short identity stays on one line.
func TestBannerFitsEightyColumns(t *testing.T) {
	long := "profile=default region=us-east-1 endpoint=http://127.0.0.1:4566 (AWS_ENDPOINT_URL_SQS)"
	short := "profile=ops region=eu-west-1 endpoint=aws"
	for _, where := range []string{long, short} {
		for _, verb := range []string{"inspect", "triage", "export", "replay", "trace"} {
			var b strings.Builder
			s := &Session{Where: where, Queue: sqsmove.Queue{URL: "https://sqs.us-east-1.amazonaws.com/123456789012/push-dlq"},
				out: Out{Logf: func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }}}
			s.Banner(verb)
			for _, l := range strings.Split(strings.TrimRight(b.String(), "\n"), "\n") {
				if len(l) > 80 {
					t.Errorf("%s: %d columns: %q", verb, len(l), l)
				}
			}
			if where == short && !strings.Contains(b.String(), "  "+short+"\n") {
				t.Errorf("%s: the short identity is not on one line:\n%s", verb, b.String())
			}
		}
	}
}
