package dlacmd

import (
	"os"
	"strings"
	"testing"

	"github.com/deadletter/deadletter/internal/cli/cmdutil"
	"github.com/deadletter/deadletter/internal/dla"
)

// A legacy object whose event time parses but lies outside years
// 0000-9999 once in UTC ("9999-12-31T23:00:00-05:00" is 10000-01-01 UTC;
// "0000-01-01T00:00:00+01:00" is year -1) is moved to sqs/10000-01-01/ or
// sqs/-0001-12-31/: not a date folder, so Athena's projection and dated
// searches never see it, and the next run lists it as legacy again, builds
// the same target (src == dst) and reports it "failed" (exit 1) on every
// run. It should go to a real date folder (or be left in place and
// reported unreadable), and a second run should find nothing more to move.
// DEFECT (migrate.go: date from ParseEventTime is not checked with
// dla.IsDate; dla.ParseEventTime accepts offsets that leave 0000-9999).
func TestMigrateEventTimeOutsideDateRangeLandsInADateFolderOnce(t *testing.T) {
	for _, tm := range []string{"9999-12-31T23:00:00-05:00", "0000-01-01T00:00:00+01:00"} {
		t.Run(tm[:4], func(t *testing.T) {
			e := newMigrateEnv(t)
			broken := legacyRoot + "2020/1/2/05/broken.json"
			raw, err := os.ReadFile(sampleArchive + "/dead-letter-archive/sqs/2024-03-05/dcb6deb2-8893-413d-aaa9-652d72007bb8-da031405-3b3c-4201-b4de-7ff3be57a02d")
			if err != nil {
				t.Fatal(err)
			}
			body := strings.ReplaceAll(string(raw), "2024-03-05T09:23:27Z", tm)
			key := legacyRoot + "odd-time.json"
			e.legacy[key] = body
			e.put(t, key, body)

			r, results := e.migrate(t, "--yes")
			for _, m := range results {
				if m.Key != key {
					continue
				}
				t.Logf("first run: %s → %v (%s)", m.Key, deref(m.Target), m.Result)
				if m.Result == "moved" {
					folder := strings.TrimPrefix(*m.Target, legacyRoot)
					folder = folder[:strings.IndexByte(folder, '/')]
					if !dla.IsDate(folder) {
						t.Errorf("moved to %s: folder %q is not a date folder", *m.Target, folder)
					}
				}
			}
			if r.code != cmdutil.ExitPartial {
				t.Errorf("first run: exit %d: %s", r.code, r.stderr)
			}
			r, again := e.migrate(t, "--yes")
			for _, m := range again {
				if m.Key != broken {
					t.Errorf("second run acts again: %s → %v: %s %v", m.Key, deref(m.Target), m.Result, deref(m.Error))
				}
			}
			if r.code != cmdutil.ExitPartial {
				t.Errorf("second run: exit %d, want %d (only the broken object left): %s", r.code, cmdutil.ExitPartial, r.stderr)
			}
		})
	}
}
