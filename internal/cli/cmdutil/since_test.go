package cmdutil

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// --since reads a whole number and a unit (s, m, h, d, w), added up when
// there are several, as aws logs tail --since does; anything else is
// refused in the tool's words, as a usage error.
func TestSinceParsesSpansAndRefusesTheRest(t *testing.T) {
	for v, want := range map[string]time.Duration{
		"30s": 30 * time.Second, "30m": 30 * time.Minute, "6h": 6 * time.Hour, "2d": 48 * time.Hour,
		"1w": 7 * 24 * time.Hour, "1d12h": 36 * time.Hour, " 6H ": 6 * time.Hour, "90m": 90 * time.Minute,
	} {
		if got, err := ParseSince(v); err != nil || got != want {
			t.Errorf("ParseSince(%q) = %v, %v; want %v", v, got, err, want)
		}
	}
	for v, want := range map[string]string{
		"abc":                  `--since: "abc" is not a duration (e.g. 30m, 6h, 2d)`,
		"":                     `--since: "" is not a duration (e.g. 30m, 6h, 2d)`,
		"6":                    `--since: "6" is not a duration (e.g. 30m, 6h, 2d)`,
		"h":                    `--since: "h" is not a duration (e.g. 30m, 6h, 2d)`,
		"6y":                   `--since: "6y" is not a duration (e.g. 30m, 6h, 2d)`,
		"-6h":                  `--since: "-6h" is not a duration (e.g. 30m, 6h, 2d)`,
		"1.5h":                 `--since: "1.5h" is not a duration (e.g. 30m, 6h, 2d)`,
		"0m":                   `--since: "0m" is no time at all`,
		"9999999999999999999d": `--since: "9999999999999999999d" is too long`,
		"40000d":               `--since: "40000d" is too long`,
	} {
		_, err := ParseSince(v)
		var exit *ExitError
		if err == nil || !strings.HasPrefix(err.Error(), want) || !errors.As(err, &exit) || exit.Code != ExitUsage {
			t.Errorf("ParseSince(%q): %v; want a usage error starting %q", v, err, want)
		}
	}
}

// The window is now minus the span to now, in UTC, to the millisecond,
// and is printed as --window reads it.
func TestSinceResolvesAgainstNow(t *testing.T) {
	now := time.Date(2026, 12, 2, 15, 0, 0, 123456789, time.FixedZone("CET", 3600))
	w, err := ResolveSince("6h", now)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := w.String(), "since 6h: 2026-12-02T08:00:00.123Z/2026-12-02T14:00:00.123Z"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	w, _ = ResolveSince("2d", time.Date(2026, 12, 2, 14, 0, 0, 0, time.UTC))
	if got, want := w.Window(), "2026-11-30T14:00:00Z/2026-12-02T14:00:00Z"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// Combining --since with another flag that selects by time names both.
func TestSinceConflictNamesBothFlags(t *testing.T) {
	err := SinceConflict("--from")
	var exit *ExitError
	if err == nil || !errors.As(err, &exit) || exit.Code != ExitUsage || !strings.Contains(err.Error(), "--since cannot be combined with --from") {
		t.Errorf("got %v", err)
	}
	if err := SinceConflict(); err != nil {
		t.Errorf("nothing given: %v", err)
	}
}
