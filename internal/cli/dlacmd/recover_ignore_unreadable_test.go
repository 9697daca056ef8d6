package dlacmd

import (
	"strings"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/cli/cmdutil"
)

// recover's --ignore-unreadable (registered with the selection flags) says
// "do not exit 3 when some objects cannot be read or decoded (they are
// still reported)", as search, stats and triage honour it. recover exited
// 3 for an unreadable object whatever the flag said. With the flag and
// nothing else wrong it exits 0, still naming the object on stderr and
// counting it; without it, 3.
func TestRecoverIgnoreUnreadableDoesNotExit3ForUnreadableObjects(t *testing.T) {
	h := localHostile(t)
	h.put(hostileRoot+"sqs/2024-03-02/written", recoverableMessage(t))
	h.put(hostileRoot+"sqs/2024-03-02/unreadable", []byte("not json {"))
	r := runAt(t, time.Now, noPrompt, "", "recover", "--archive", h.spec, "--database-url", hostileDB(t), "--offline", "--yes", "--keep", "--ignore-unreadable")
	if r.code != 0 {
		t.Fatalf("--ignore-unreadable: exit %d, want 0:\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "dla: unreadable") {
		t.Errorf("the unreadable object is not reported on stderr:\n%s", r.stderr)
	}
	r = runAt(t, time.Now, noPrompt, "", "recover", "--archive", h.spec, "--database-url", hostileDB(t), "--offline", "--yes", "--keep")
	if r.code != cmdutil.ExitPartial {
		t.Fatalf("without --ignore-unreadable: exit %d, want %d:\n%s", r.code, cmdutil.ExitPartial, r.stderr)
	}
}
