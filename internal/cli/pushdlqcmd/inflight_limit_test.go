package pushdlqcmd

import (
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/sqsmove"
	"github.com/deadletter/deadletter/internal/testsupport"
	"github.com/deadletter/deadletter/internal/workflow/pushreplay"
)

// limitedDLQ is a push DLQ of n messages (1004, priority 1, one minute
// apart from 2025-11-14T08:00Z) seen through a proxy that enforces an
// in-flight limit of limit messages; it returns the DLQ, the base URL,
// the bodies and a runner of pushdlq through the proxy (newLimitWorld).
func limitedDLQ(t *testing.T, n, limit int) (dlq, base string, bodies map[string]bool, run func(args ...string) (int, string, string)) {
	t.Helper()
	w := newLimitWorld(t, n, limit, 0)
	return w.dlq, w.base, w.all(), w.runYes
}

// census drains the queues and checks that each body is in exactly one of
// them, and nowhere twice.
func census(t *testing.T, bodies map[string]bool, extra map[string]int, queues ...string) {
	t.Helper()
	c := testsupport.SQSClient(t)
	seen := map[string]int{}
	for b, n := range extra {
		seen[b] += n
	}
	for _, q := range queues {
		for _, m := range testsupport.Drain(t, c, q, 5*time.Second) {
			seen[*m.Body]++
		}
	}
	for b := range bodies {
		if seen[b] != 1 {
			t.Errorf("a message is there %d times, want once: %.60s", seen[b], b)
		}
	}
}

// A DLQ deeper than SQS's in-flight limit: inspect, triage, a dry run and
// export each say how far they got (exit 3, never exit 4, never the SDK's
// chain), and keep every message; export --delete whose operator declines
// to read on past the limit (deleting what was read) gets through the
// whole queue in runs, each message exported exactly once.
//
// How far a scan gets before OverLimit depends on how its concurrent
// receives interleave (a receive answered OverLimit can be handled before
// another's messages are counted), so a scan is held only to have read
// some and not all, and the proxy to have refused a receive.
func TestDLQPastTheInFlightLimitLosesNothingAndSaysHowFarItGot(t *testing.T) {
	const n, limit = 60, 25
	w := newLimitWorld(t, n, limit, 0)
	dlq, bodies, run := w.dlq, w.all(), w.runYes
	checkNote := func(what, stderr string) {
		t.Helper()
		if !strings.Contains(stderr, "pushdlq: read the first ") || !strings.Contains(stderr, "SQS's in-flight limit (OverLimit) stopped the scan") {
			t.Errorf("%s: no note of how far it got:\n%s", what, stderr)
		}
		if strings.Contains(stderr, "operation error") || strings.Contains(stderr, "overlimit-request") {
			t.Errorf("%s: the SDK's chain on stderr:\n%s", what, stderr)
		}
	}
	code, out, stderr := run("inspect", "--dlq", dlq, "--all", "-o", "json")
	var rep InspectReport
	if code != 3 || json.Unmarshal([]byte(out), &rep) != nil || !rep.InFlightLimit || rep.Scanned < 1 || rep.Scanned >= n {
		t.Fatalf("inspect: exit %d, scanned %d, in_flight_limit %v:\n%s", code, rep.Scanned, rep.InFlightLimit, stderr)
	}
	if w.limit.Refused() == 0 {
		t.Fatalf("inspect stopped at %d of %d though no receive was refused", rep.Scanned, n)
	}
	checkNote("inspect", stderr)
	if code, _, stderr := run("triage", "--dlq", dlq); code != 3 {
		t.Errorf("triage: exit %d: %s", code, stderr)
	} else {
		checkNote("triage", stderr)
	}
	code, out, stderr = run("replay", "--dlq", dlq, "--queue-base-url", "https://sqs.invalid/1/x-", "--window", "2025-11-14T00:00:00Z/2025-11-15T00:00:00Z", "--codes", "1004", "--dry-run", "-o", "json")
	var sum pushreplay.Summary
	if code != 3 || json.Unmarshal([]byte(out), &sum) != nil || sum.Scanned < 1 || sum.Scanned >= n || sum.Eligible != sum.Scanned {
		t.Errorf("replay --dry-run: exit %d, scanned %d, eligible %d:\n%s", code, sum.Scanned, sum.Eligible, stderr)
	}
	checkNote("replay --dry-run", stderr)

	dir := t.TempDir()
	code, _, stderr = run("export", "--dlq", dlq, "--out", filepath.Join(dir, "first.ndjson"))
	if lines := len(testsupport.ReadLines(t, filepath.Join(dir, "first.ndjson"))); code != 3 || lines < 1 || lines >= n {
		t.Fatalf("export: exit %d, %d of %d messages in the file:\n%s", code, lines, n, stderr)
	}
	checkNote("export", stderr)

	exported := map[string]int{}
	for i := 0; i < 10; i++ {
		file := filepath.Join(dir, "drain-"+strconv.Itoa(i)+".ndjson")
		// No to reading on, yes to deleting what the file holds.
		code, _, stderr, asked := w.run([]string{"and read on?=>no", "Delete the=>yes"}, "export", "--dlq", dlq, "--out", file, "--delete")
		if (code == 3 && asked != 2) || asked > 2 {
			t.Errorf("export --delete run %d: exit %d after %d questions:\n%s", i, code, asked, stderr)
		}
		for _, l := range testsupport.ReadLines(t, file) {
			var m sqsmove.Message
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatal(err)
			}
			exported[m.Body]++
		}
		if code == 0 {
			break
		}
		if code != 3 {
			t.Fatalf("export --delete run %d: exit %d:\n%s", i, code, stderr)
		}
	}
	census(t, bodies, exported, dlq)
}

// A streamed replay (--yes) past the limit: what it sends it deletes, so
// it can read on; each message ends in the target or in the DLQ, once.
func TestStreamedReplayPastTheInFlightLimitLosesAndDoublesNothing(t *testing.T) {
	const n, limit = 60, 25
	dlq, base, bodies, run := limitedDLQ(t, n, limit)
	code, out, stderr := run("replay", "--dlq", dlq, "--queue-base-url", base, "--window", "2025-11-14T00:00:00Z/2025-11-15T00:00:00Z", "--codes", "1004", "--yes", "-o", "json")
	var sum pushreplay.Summary
	if (code != 0 && code != 3) || json.Unmarshal([]byte(out), &sum) != nil {
		t.Fatalf("replay: exit %d:\n%s\n%s", code, out, stderr)
	}
	if sum.Sent+sum.Failed+sum.Uncertain+sum.HoldLost+sum.Abandoned != sum.Eligible || sum.Scanned == 0 {
		t.Errorf("summary does not add up: scanned %d, eligible %d, sent %d", sum.Scanned, sum.Eligible, sum.Sent)
	}
	if strings.Contains(stderr, "operation error") {
		t.Errorf("the SDK's chain on stderr:\n%s", stderr)
	}
	census(t, bodies, nil, dlq, base+"P1")
}
