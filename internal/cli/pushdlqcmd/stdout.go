package pushdlqcmd

import (
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/deadletter/deadletter/internal/cli/cmdutil"
)

// errStdoutClosed is why a run stops when its reader went away
// (`pushdlq replay -o ndjson | head -1`).
var errStdoutClosed = errors.New("stdout was closed")

// stdoutGuard is stdout for a command that must finish its safety work
// when nobody reads its output any more. The first failed write stops the
// printing (every later write fails at once, writing nothing) and calls
// onClose, which stops the run; the command then releases what it holds,
// completes its journal and exits non-zero. pushdlq ignores SIGPIPE, so a
// write to a closed pipe returns EPIPE here instead of killing the process.
type stdoutGuard struct {
	w       io.Writer
	onClose func()
	mu      sync.Mutex
	err     error
}

func newStdoutGuard(w io.Writer, onClose func()) *stdoutGuard {
	return &stdoutGuard{w: w, onClose: onClose}
}

func (g *stdoutGuard) Write(b []byte) (int, error) {
	g.mu.Lock()
	if g.err != nil {
		g.mu.Unlock()
		return 0, g.err
	}
	n, err := g.w.Write(b)
	first := false
	if err != nil {
		g.err, first = fmt.Errorf("%w: %w", errStdoutClosed, err), true
	}
	g.mu.Unlock()
	if first && g.onClose != nil {
		g.onClose()
	}
	return n, err
}

// Closed reports whether a write failed.
func (g *stdoutGuard) Closed() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.err != nil
}

// stoppedError is the command's error once stdout was closed: exit 1 (not
// the shell's 141, not 130), saying what was done with the messages.
func stoppedError(what string) error {
	return &cmdutil.ExitError{Code: cmdutil.ExitFailure, Err: fmt.Errorf("%w: stopped; %s", errStdoutClosed, what)}
}
