package dlacmd

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestReadKeys(t *testing.T) {
	keys, err := readKeys(strings.NewReader("a\n\n# a comment\n  b  \n"), []string{"x", "-", "y"}, false)
	if err != nil || !slices.Equal(keys, []string{"x", "a", "b", "y"}) {
		t.Errorf("keys = %q, %v", keys, err)
	}
	if _, err := readKeys(strings.NewReader(""), []string{"-"}, false); err == nil {
		t.Error("empty stdin must be a usage error")
	}
	// -0: any byte but NUL, taken exactly as it came.
	hostile := "demo/dead-letter-archive/sqs/2024-03-01/x\nbackups/db-dump.sql"
	keys, err = readKeys(strings.NewReader(hostile+"\x00 # not a comment \x00\x00last"), []string{"-"}, true)
	if err != nil || !slices.Equal(keys, []string{hostile, " # not a comment ", "last"}) {
		t.Errorf("-0 keys = %q, %v", keys, err)
	}
}

func TestLineSafeKey(t *testing.T) {
	for key, want := range map[string]bool{
		"demo/dead-letter-archive/sqs/2024-03-01/exec a+b:ü=1&x-uuid":    true,
		"demo/dead-letter-archive/sqs/2024-03-01/x\nbackups/db-dump.sql": false,
		"demo/dead-letter-archive/sqs/2024-03-01/x\r":                    false,
		"demo/dead-letter-archive/sqs/2024-03-01/x ":                     false,
		" demo/dead-letter-archive/sqs/2024-03-01/x":                     false,
		"#demo/dead-letter-archive/sqs/2024-03-01/x":                     false,
		"demo/dead-letter-archive/sqs/2024-03-01/\xff":                   false,
	} {
		if got := lineSafeKey(key); got != want {
			t.Errorf("lineSafeKey(%q) = %v, want %v", key, got, want)
		}
	}
}

func TestParseDate(t *testing.T) {
	now := time.Date(2024, 3, 1, 0, 30, 0, 0, time.FixedZone("ahead", 2*3600)) // still Feb 29 in UTC
	for in, want := range map[string]string{"today": "2024-02-29", "Yesterday": "2024-02-28", "2024-01-31": "2024-01-31"} {
		if got, err := parseDate("--date", in, now); err != nil || got != want {
			t.Errorf("parseDate(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := parseDate("--date", "2024-1-31", now); err == nil {
		t.Error("2024-1-31 must be refused")
	}
}
