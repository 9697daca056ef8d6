package calendar

import "testing"

// Issue 38 item 9: --date 2024-02-30 got the format error, though its
// format is right: the day does not exist, and the error now says so.
func TestNotADayNamesTheDayThatDoesNotExist(t *testing.T) {
	for s, want := range map[string]string{
		"2024-02-30":           "2024-02-30 is not a day (February 2024 has 29 days)",
		"2023-02-29":           "2023-02-29 is not a day (February 2023 has 28 days)",
		"2024-04-31T08:00:00Z": "2024-04-31 is not a day (April 2024 has 30 days)",
		"2024-03-00":           "2024-03-00 is not a day (March 2024 has 31 days)",
		"2024-13-01":           "2024-13-01 is not a day (a year has 12 months)",
		"2024-02-29":           "",
		"2024-12-31T23:59:59Z": "",
		"2024-2-30":            "", // not the form: the caller's format error
		"today":                "",
		"20x4-02-30":           "",
	} {
		err := NotADay(s)
		if got := ""; err != nil {
			got = err.Error()
			if got != want {
				t.Errorf("%q: %q, want %q", s, got, want)
			}
		} else if want != "" {
			t.Errorf("%q: nil, want %q", s, want)
		}
	}
}
