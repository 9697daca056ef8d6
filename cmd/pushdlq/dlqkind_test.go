package main_test

import (
	"strings"
	"testing"

	"github.com/deadletter/deadletter/internal/testsupport"
)

// A FIFO DLQ is refused by every command that reads it, before anything
// is received (the scan would stop at the first message of each group):
// exit 2, saying why.
func TestFIFODLQIsRefused(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 1)
	fifo := testsupport.CreateQueue(t, w.c, "e2e"+testsupport.RandomHex(3)+"-push-dlq.fifo", map[string]string{"FifoQueue": "true"})
	for _, args := range [][]string{
		{"replay", "--dlq", fifo, "--queue-base-url", w.base, "--window", winStart + "/" + winEnd, "--codes", "1004", "--yes"},
		{"inspect", "--dlq", fifo},
		{"export", "--dlq", fifo, "--out", "-"},
	} {
		_, stderr, code := w.run(nil, "", args...)
		if code != 2 || !strings.Contains(stderr, "is a FIFO queue; the push DLQ is a standard queue") || strings.Contains(stderr, "Scanned") {
			t.Errorf("%s: exit %d, want 2 refusing the FIFO queue: %s", args[0], code, stderr)
		}
	}
}
