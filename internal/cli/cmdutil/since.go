package cmdutil

import (
	"strconv"
	"strings"
	"time"
)

// maxSince is the longest --since accepted: a span longer than this is a
// typo (and a time.Duration past ~292 years overflows).
const maxSince = 100 * 366 * 24 * time.Hour

// ParseSince reads a --since value, as aws logs tail --since writes it: a
// whole number and a unit, s, m, h, d (24 hours) or w (7 days), several of
// them added up (1d12h). It must be more than zero. The error is in the
// tool's words, naming the flag.
func ParseSince(v string) (time.Duration, error) {
	notDuration := UsageErrorf("--since: %q is not a duration (e.g. 30m, 6h, 2d)", v)
	s := strings.ToLower(strings.TrimSpace(v))
	if s == "" {
		return 0, notDuration
	}
	var total time.Duration
	for s != "" {
		i := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == 0 || i == len(s) {
			return 0, notDuration
		}
		n, err := strconv.ParseInt(s[:i], 10, 64)
		if err != nil {
			return 0, UsageErrorf("--since: %q is too long (at most 100 years)", v)
		}
		unit, ok := map[byte]time.Duration{'s': time.Second, 'm': time.Minute, 'h': time.Hour, 'd': 24 * time.Hour, 'w': 7 * 24 * time.Hour}[s[i]]
		if !ok {
			return 0, notDuration
		}
		if n > int64(maxSince/unit) || total+time.Duration(n)*unit > maxSince {
			return 0, UsageErrorf("--since: %q is too long (at most 100 years)", v)
		}
		total += time.Duration(n) * unit
		s = s[i+1:]
	}
	if total == 0 {
		return 0, UsageErrorf("--since: %q is no time at all; want a span more than zero (e.g. 30m, 6h, 2d)", v)
	}
	return total, nil
}

// SinceWindow is what --since resolved to: the span as given and the
// window from now−span to now, to the millisecond (createdAt's precision).
type SinceWindow struct {
	Given      string
	Start, End time.Time
}

// ResolveSince parses a --since value and resolves it against now.
func ResolveSince(v string, now time.Time) (SinceWindow, error) {
	d, err := ParseSince(v)
	if err != nil {
		return SinceWindow{}, err
	}
	end := now.UTC().Truncate(time.Millisecond)
	return SinceWindow{Given: strings.TrimSpace(v), Start: end.Add(-d), End: end}, nil
}

// Window is START/END in UTC, as --window reads it (milliseconds shown
// only when they are not zero).
func (w SinceWindow) Window() string {
	return w.Start.Format(time.RFC3339Nano) + "/" + w.End.Format(time.RFC3339Nano)
}

// String is the resolution as the plans print it:
// "since 6h: 2026-12-02T08:00:00Z/2026-12-02T14:00:00Z".
func (w SinceWindow) String() string {
	return "since " + w.Given + ": " + w.Window()
}

// SinceConflict refuses --since with a flag that also selects by time
// (given names the ones given, in the order to name them).
func SinceConflict(given ...string) error {
	for _, g := range given {
		if g != "" {
			return UsageErrorf("--since cannot be combined with %s: both select by time; give one", g)
		}
	}
	return nil
}
