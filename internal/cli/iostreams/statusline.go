package iostreams

import (
	"io"
	"sync"
	"time"

	"github.com/charmbracelet/x/ansi"
)

// A status line is the progress line drawn on a terminal's stderr
// (`replaying: 134 of 362 done`). Every other write to that terminal,
// on stderr or on stdout when it is the same terminal, goes through a
// statusWriter, which erases the line first: a warning, the journal line,
// the plan, an interrupt or an error never starts glued to the end of a
// progress line (issue 38 item 5).
//
// Between two writes the cursor waits at the start of the line below the
// status, not at its end. So what a process outside this one prints
// there, such as the shell's "Killed" after a SIGKILL, begins a line of
// its own, and the "^C" the terminal echoes on Ctrl-C lands on that line,
// which erasing the status erases too. On a dumb terminal (no cursor
// movement) the line is drawn and erased with carriage returns and
// spaces, as before.
type statusLine struct {
	mu    sync.Mutex
	w     io.Writer // the terminal (stderr)
	dumb  bool
	width func() int // the terminal's columns; 0: unknown
	shown int        // columns of the status shown (0: none)
	// holdUntil: no status is drawn before it (stdout piped).
	holdUntil time.Time
}

// PipedStatusHold is how long a status line waits before it is first
// drawn while stdout is piped: `dla search … | head -1` ends well within
// it, and then no "1 match" is left on the terminal among the lines head
// printed, where only the reader of the pipe could have erased it.
const PipedStatusHold = time.Second

// statusWriter writes to one stream of the terminal that shows the status
// line, erasing the line first.
type statusWriter struct {
	line *statusLine
	w    io.Writer
}

func (sw *statusWriter) Write(b []byte) (int, error) {
	sw.line.mu.Lock()
	defer sw.line.mu.Unlock()
	sw.line.eraseLocked()
	return sw.w.Write(b)
}

// DrawStatus shows s as the status line, in place of the one shown.
func (sw *statusWriter) DrawStatus(s string) {
	l := sw.line
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.holdUntil.IsZero() && time.Now().Before(l.holdUntil) {
		return
	}
	if w := l.width(); w > 1 && ansi.StringWidth(s) > w-1 {
		// One row, never wrapped: erasing goes back exactly one row.
		s = ansi.Truncate(s, w-2, "…")
	}
	if l.dumb {
		pad := max(l.shown-ansi.StringWidth(s), 0)
		io.WriteString(l.w, "\r"+s+spaces(pad))
		l.shown = max(ansi.StringWidth(s), 1)
		return
	}
	l.eraseLocked()
	io.WriteString(l.w, s+"\n")
	l.shown = max(ansi.StringWidth(s), 1)
}

// ClearStatus erases the status line, if one is shown.
func (sw *statusWriter) ClearStatus() {
	sw.line.mu.Lock()
	defer sw.line.mu.Unlock()
	sw.line.eraseLocked()
}

// eraseLocked erases the status line and leaves the cursor at the start of
// the row it held.
func (l *statusLine) eraseLocked() {
	if l.shown == 0 {
		return
	}
	if l.dumb {
		io.WriteString(l.w, "\r"+spaces(l.shown)+"\r")
	} else {
		// The row below first (an echoed ^C or typed text), then the
		// status's own row.
		io.WriteString(l.w, "\r\x1b[2K\x1b[1A\x1b[2K")
	}
	l.shown = 0
}

func spaces(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = ' '
	}
	return string(b)
}

// StatusLine is what a stream that can show a status line offers
// (cmdutil.Progress draws through it).
type StatusLine interface {
	DrawStatus(s string)
	ClearStatus()
}
