package dlacmd

import (
	"strings"
	"testing"

	"github.com/deadletter/deadletter/internal/testsupport/fakeathena"
)

// --limit with --engine athena prints what local search
// with --limit prints for the same keys and exits 0 (stopping the result
// stream is not an error). Paging is not asserted: the scan reads ahead up
// to its concurrency, so a short result is read whole.
func TestAthenaLimitPrintsWhatLocalSearchPrints(t *testing.T) {
	e := newAthenaEnv(t)
	archiveURL := "s3://" + e.bucket + "/demo"
	args := []string{"search", "--archive", archiveURL, "--date", "2024-03-05", "-o", "keys", "--ignore-unreadable"}
	all := run(t, false, nil, "", args...)
	keys := strings.Fields(all.stdout)
	if all.code != 0 || len(keys) < 5 {
		t.Fatalf("setup: %d keys, %s", len(keys), all.stderr)
	}
	e.fake.PageSize = 1
	e.plan = func(string) fakeathena.Execution { return e.rows(keys) }
	want := run(t, false, nil, "", append(args, "--limit", "2")...)
	got := run(t, false, nil, "", append(args, "--limit", "2", "--engine", "athena")...)
	if got.code != 0 || got.stdout != want.stdout || len(strings.Fields(got.stdout)) != 2 {
		t.Fatalf("--limit 2: exit %d %s\nathena:\n%s\nlocal:\n%s", got.code, got.stderr, got.stdout, want.stdout)
	}
}
