package dlacmd

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestWrittenKeyNamedTwiceIsWrittenAndDeletedOnce: a written object named
// twice (short and in full), at concurrency 1 and 8: it is written and deleted once, the run exits 0, and nothing says a
// delete failed or an object was left.
func TestWrittenKeyNamedTwiceIsWrittenAndDeletedOnce(t *testing.T) {
	for _, conc := range []int{1, 8} {
		h := localHostile(t)
		h.put(hostileRoot+"sqs/2024-03-02/ok", recoverableMessage(t))
		args := []string{"recover", "--archive", h.spec, "--database-url", hostileDB(t), "--offline", "--yes",
			"--concurrency", strconv.Itoa(conc), "-o", "ndjson", "sqs/2024-03-02/ok", hostileRoot + "sqs/2024-03-02/ok"}
		r := runAt(t, time.Now, noPrompt, "", args...)
		if _, ok := h.get(hostileRoot + "sqs/2024-03-02/ok"); ok {
			t.Errorf("concurrency %d: the written object is still there (exit %d): %s", conc, r.code, r.stderr)
		}
		if r.code != 0 || strings.Contains(r.stderr, "not deleted") || !strings.Contains(r.stdout, `"deleted":1,`) {
			t.Errorf("concurrency %d: exit %d\n%s%s", conc, r.code, r.stdout, r.stderr)
		}
	}
}
