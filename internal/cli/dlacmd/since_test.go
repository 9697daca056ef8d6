package dlacmd

import (
	"strings"
	"testing"
	"time"
)

// sinceNow is the clock of the --since tests: 30 hours after it is
// 2024-03-04T00:00:00Z, so --since 30h reaches back into the 4th.
var sinceNow = func() time.Time { return time.Date(2024, 3, 5, 6, 0, 0, 0, time.UTC) }

// --since SPAN selects the date folders from the day of now−SPAN to today,
// exactly as --from and --to naming those days do, and says on stderr the
// window it resolved to and the whole folders it reads (folders are not
// filtered by time within a day).
func TestSinceSelectsTheDateFoldersOfTheSpan(t *testing.T) {
	since := runAt(t, sinceNow, nil, "", "search", "--archive", sampleArchive, "--since", "30h", "-o", "keys", "--ignore-unreadable")
	dates := runAt(t, sinceNow, nil, "", "search", "--archive", sampleArchive, "--from", "2024-03-04", "--to", "2024-03-05", "-o", "keys", "--ignore-unreadable")
	if since.code != 0 || dates.code != 0 {
		t.Fatalf("exit %d (%s), %d (%s)", since.code, since.stderr, dates.code, dates.stderr)
	}
	if since.stdout == "" || since.stdout != dates.stdout {
		t.Errorf("--since 30h selected\n%s\nwant what --from 2024-03-04 --to 2024-03-05 selects:\n%s", since.stdout, dates.stdout)
	}
	for _, key := range strings.Fields(since.stdout) {
		if !strings.Contains(key, "/sqs/2024-03-04/") && !strings.Contains(key, "/sqs/2024-03-05/") {
			t.Errorf("key outside the span's folders: %s", key)
		}
	}
	want := "dla: since 30h: 2024-03-04T00:00:00Z/2024-03-05T06:00:00Z: reading the date folders 2024-03-04 to 2024-03-05 (whole days)\n"
	if !strings.Contains(since.stderr, want) {
		t.Errorf("stderr lacks %q:\n%s", want, since.stderr)
	}

	// Within one day, stats and triage say so with the same line.
	for _, verb := range []string{"stats", "triage"} {
		r := runAt(t, sinceNow, nil, "", verb, "--archive", sampleArchive, "--since", "6h", "--ignore-unreadable")
		want := "dla: since 6h: 2024-03-05T00:00:00Z/2024-03-05T06:00:00Z: reading the date folder 2024-03-05 (the whole day)\n"
		if r.code != 0 || !strings.Contains(r.stderr, want) {
			t.Errorf("%s --since 6h: exit %d, stderr lacks %q:\n%s", verb, r.code, want, r.stderr)
		}
		if verb == "stats" && (!strings.Contains(r.stdout, "2024-03-05") || strings.Contains(r.stdout, "2024-03-04")) {
			t.Errorf("stats --since 6h counted other days:\n%s", r.stdout)
		}
		// The commands triage prints select the same folders whenever
		// they run: the dates --since resolved to, never --since itself.
		if verb == "triage" && (strings.Contains(r.stdout, "--since") || !strings.Contains(r.stdout, "--date 2024-03-05")) {
			t.Errorf("triage --since 6h printed:\n%s", r.stdout)
		}
	}
}

// --since with --date, --from or --to is refused in one line naming both
// flags (exit 2), as is a value that is not a span.
func TestSinceRefusesOtherDateFlagsAndBadSpans(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--since", "6h", "--date", "today"}, "--since cannot be combined with --date"},
		{[]string{"--since", "6h", "--from", "2024-03-01"}, "--since cannot be combined with --from"},
		{[]string{"--to", "2024-03-01", "--since", "6h"}, "--since cannot be combined with --to"},
		{[]string{"--since", "abc"}, `dla: --since: "abc" is not a duration (e.g. 30m, 6h, 2d)`},
	} {
		for _, verb := range []string{"search", "stats", "triage"} {
			r := runAt(t, sinceNow, nil, "", append([]string{verb, "--archive", sampleArchive}, c.args...)...)
			if r.code != 2 || !strings.Contains(r.stderr, c.want) || r.stdout != "" {
				t.Errorf("%s %v: exit %d, want 2 with %q; stderr: %s", verb, c.args, r.code, c.want, r.stderr)
			}
		}
	}
}
