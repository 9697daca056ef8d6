package dlacmd

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestWrittenKeyNamedTwiceIsWrittenAndDeletedOnce: a written object named
// twice (short and in full), on the new recover path and the old, at
// concurrency 1 and 8: it is written and deleted once, the run exits 0, and nothing says a
// delete failed or an object was left.
func TestWrittenKeyNamedTwiceIsWrittenAndDeletedOnce(t *testing.T) {
	for _, baseline := range []bool{false, true} {
		for _, conc := range []int{1, 8} {
			h := localHostile(t)
			h.put(hostileRoot+"sqs/2024-03-02/ok", recoverableMessage(t))
			args := []string{"recover", "--archive", h.spec, "--database-url", hostileDB(t), "--offline", "--yes",
				"--concurrency", strconv.Itoa(conc), "-o", "ndjson", "sqs/2024-03-02/ok", hostileRoot + "sqs/2024-03-02/ok"}
			r := runAt(t, time.Now, baselineEnv(noPrompt, baseline), "", args...)
			if _, ok := h.get(hostileRoot + "sqs/2024-03-02/ok"); ok {
				t.Errorf("baseline %v, concurrency %d: the written object is still there (exit %d): %s", baseline, conc, r.code, r.stderr)
			}
			if r.code != 0 || strings.Contains(r.stderr, "not deleted") || !strings.Contains(r.stdout, `"deleted":1,`) {
				t.Errorf("baseline %v, concurrency %d: exit %d\n%s%s", baseline, conc, r.code, r.stdout, r.stderr)
			}
		}
	}
}
