package cmdutil

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/deadletter/deadletter/internal/cli/iostreams"
)

// Progress draws one status line on stderr, at most every 100 ms, and only
// when stderr is a terminal; otherwise every call is a no-op. On the
// process's own stderr (iostreams.System) the line is the terminal's
// status line, which every other write to the terminal erases first.
type Progress struct {
	mu      sync.Mutex
	w       io.Writer
	enabled bool
	last    time.Time
	width   int
}

// NewProgress returns a progress line writing to w when enabled.
func NewProgress(w io.Writer, enabled bool) *Progress { return &Progress{w: w, enabled: enabled} }

// Update redraws the line, throttled.
func (p *Progress) Update(format string, args ...any) {
	if p == nil || !p.enabled {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if now := time.Now(); now.Sub(p.last) >= 100*time.Millisecond {
		p.last = now
		p.draw(fmt.Sprintf(format, args...))
	}
}

// Clear erases the line; call it before printing anything else on stderr.
func (p *Progress) Clear() {
	if p == nil || !p.enabled {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if sl, ok := p.w.(iostreams.StatusLine); ok {
		sl.ClearStatus()
		return
	}
	if p.width > 0 {
		fmt.Fprintf(p.w, "\r%*s\r", p.width, "")
		p.width = 0
	}
}

func (p *Progress) draw(s string) {
	if sl, ok := p.w.(iostreams.StatusLine); ok {
		sl.DrawStatus(s)
		return
	}
	pad := p.width - len(s)
	if pad < 0 {
		pad = 0
	}
	fmt.Fprintf(p.w, "\r%s%*s", s, pad, "")
	p.width = len(s)
}
