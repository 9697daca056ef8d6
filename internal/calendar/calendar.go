// Package calendar tells a date that is well formed but names no day
// (2024-02-30) from one that is badly formed, so that an error can say
// which: the format was right, the day does not exist.
package calendar

import (
	"fmt"
	"strconv"
	"time"
)

// NotADay returns an error naming s as no day of the calendar when s begins
// with a date of the form YYYY-MM-DD whose month or day does not exist
// ("2024-02-30 is not a day (February 2024 has 29 days)"), and nil
// otherwise: for a real day, and for text not of that form (the caller's
// format error says what it wants).
func NotADay(s string) error {
	if len(s) < 10 || s[4] != '-' || s[7] != '-' {
		return nil
	}
	y, ey := digits(s[0:4])
	m, em := digits(s[5:7])
	d, ed := digits(s[8:10])
	if !ey || !em || !ed {
		return nil
	}
	date := s[:10]
	if m < 1 || m > 12 {
		return fmt.Errorf("%s is not a day (a year has 12 months)", date)
	}
	days := time.Date(y, time.Month(m)+1, 0, 0, 0, 0, 0, time.UTC).Day()
	if d < 1 || d > days {
		return fmt.Errorf("%s is not a day (%s %d has %d days)", date, time.Month(m), y, days)
	}
	return nil
}

func digits(s string) (int, bool) {
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}
