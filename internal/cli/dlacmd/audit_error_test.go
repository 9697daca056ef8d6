package dlacmd

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// An error text long enough to be cut through its URL keeps no byte of
// the URL's password: the text is redacted before it is cut, and cut at a
// character's start.
func TestARecordedErrorCutShortKeepsNoPartOfAPassword(t *testing.T) {
	for pad := 270; pad < 300; pad++ {
		got := recordError(strings.Repeat("é", pad/2) + strings.Repeat("x", pad%2) + " postgres://u:SECRETPASSWORD@db:5432/c failed")
		if strings.Contains(got, "SECRET") {
			t.Fatalf("pad %d: %q keeps part of the password", pad, got)
		}
		if !utf8.ValidString(got) {
			t.Fatalf("pad %d: %q is cut inside a character", pad, got)
		}
	}
}
