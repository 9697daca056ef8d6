// Package iostreams holds the three standard streams with what the CLI
// needs to know about them: which are terminals, whether colour is wanted
// (NO_COLOR, CLICOLOR, CLICOLOR_FORCE, TERM=dumb), and whether it may prompt.
// Data goes to Out; progress, plans and warnings go to ErrOut.
package iostreams

import (
	"bytes"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
	"golang.org/x/term"
)

// IOStreams are the process's streams.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
	// Interrupted is closed on Ctrl-C or SIGTERM (the command's context's
	// Done): a question waiting for its answer stops waiting. nil: never.
	Interrupted <-chan struct{}

	inTTY, outTTY, errTTY bool
	getenv                func(string) string
	width                 int // stdout's columns when set by SetWidth
}

// System returns the real streams, with terminal detection.
func System() *IOStreams {
	s := &IOStreams{
		In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr,
		inTTY: isTerminal(os.Stdin), outTTY: isTerminal(os.Stdout), errTTY: isTerminal(os.Stderr),
		getenv: os.Getenv,
	}
	s.EnableStatusLine()
	return s
}

// EnableStatusLine makes stderr, when it is a terminal, able to show a
// status line (StatusLine) that every other write to stderr, and to
// stdout when it is a terminal too, erases first. System calls it; tests
// call it after SetTTY and SetEnv.
func (s *IOStreams) EnableStatusLine() {
	if !s.errTTY {
		return
	}
	if _, done := s.ErrOut.(*statusWriter); done {
		return
	}
	line := &statusLine{w: s.ErrOut, dumb: s.getenv("TERM") == "dumb", width: s.ErrTerminalWidth}
	if !s.outTTY {
		// Stdout piped (| head, | jq): the process reading it writes to
		// this terminal too, where no erase of ours can reach its lines.
		// A run that ends within the hold never draws a status at all.
		line.holdUntil = time.Now().Add(PipedStatusHold)
	}
	if s.outTTY {
		s.Out = &statusWriter{line: line, w: s.Out}
	}
	s.ErrOut = &statusWriter{line: line, w: s.ErrOut}
}

// fileOf is the file under w: a stream's own, or the one a status line
// writes to.
func fileOf(w io.Writer) (*os.File, bool) {
	if sw, ok := w.(*statusWriter); ok {
		w = sw.w
	}
	f, ok := w.(*os.File)
	return f, ok
}

func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// Test returns streams over buffers, none of them a terminal.
func Test() (s *IOStreams, in, out, errOut *bytes.Buffer) {
	in, out, errOut = &bytes.Buffer{}, &bytes.Buffer{}, &bytes.Buffer{}
	return &IOStreams{In: in, Out: out, ErrOut: errOut, getenv: func(string) string { return "" }}, in, out, errOut
}

// SetTTY marks the streams as terminals or not (tests).
func (s *IOStreams) SetTTY(in, out, errOut bool) { s.inTTY, s.outTTY, s.errTTY = in, out, errOut }

// SetWidth sets the terminal width of stdout (tests).
func (s *IOStreams) SetWidth(columns int) { s.width = columns }

// TerminalWidth is the number of columns of stdout when it is a terminal:
// the terminal's own size, else $COLUMNS, else 80. It is 0 when stdout is
// not a terminal, and for test streams without SetWidth or COLUMNS, where
// tables are not fitted.
func (s *IOStreams) TerminalWidth() int {
	if s.width > 0 {
		return s.width
	}
	if !s.outTTY {
		return 0
	}
	if f, ok := fileOf(s.Out); ok {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 0 {
			return w
		}
	}
	if n, err := strconv.Atoi(s.getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	if _, ok := fileOf(s.Out); ok {
		return 80
	}
	return 0
}

// ErrTerminalWidth is the number of columns of stderr when it is a
// terminal, found as TerminalWidth finds stdout's: 0 when stderr is not a
// terminal. With stdout piped (`dla triage | less`) and stderr on the
// terminal, what goes to stderr is fitted to stderr's own width.
func (s *IOStreams) ErrTerminalWidth() int {
	if !s.errTTY {
		return 0
	}
	if s.width > 0 {
		return s.width
	}
	if f, ok := fileOf(s.ErrOut); ok {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 0 {
			return w
		}
	}
	if n, err := strconv.Atoi(s.getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	if _, ok := fileOf(s.ErrOut); ok {
		return 80
	}
	return 0
}

// SetEnv replaces the environment lookup (tests).
func (s *IOStreams) SetEnv(getenv func(string) string) { s.getenv = getenv }

func (s *IOStreams) IsStdinTTY() bool  { return s.inTTY }
func (s *IOStreams) IsStdoutTTY() bool { return s.outTTY }
func (s *IOStreams) IsStderrTTY() bool { return s.errTTY }

// colorFor decides colour for one stream, following no-color.org and the
// CLICOLOR conventions: NO_COLOR (non-empty) and CLICOLOR=0 turn it off,
// CLICOLOR_FORCE (non-empty, not 0) turns it on even when piped.
func (s *IOStreams) colorFor(tty bool) bool {
	if s.getenv("NO_COLOR") != "" {
		return false
	}
	if f := s.getenv("CLICOLOR_FORCE"); f != "" && f != "0" {
		return true
	}
	if s.getenv("CLICOLOR") == "0" || s.getenv("TERM") == "dumb" {
		return false
	}
	return tty
}

// ColorEnabled reports whether stdout gets colour.
func (s *IOStreams) ColorEnabled() bool { return s.colorFor(s.outTTY) }

// ErrColorEnabled reports whether stderr gets colour.
func (s *IOStreams) ErrColorEnabled() bool { return s.colorFor(s.errTTY) }

// Renderer returns a lipgloss renderer for stdout, with colour decided for
// stdout alone.
func (s *IOStreams) Renderer() *lipgloss.Renderer { return s.renderer(s.Out, s.ColorEnabled()) }

// ErrRenderer returns a lipgloss renderer for stderr.
func (s *IOStreams) ErrRenderer() *lipgloss.Renderer {
	return s.renderer(s.ErrOut, s.ErrColorEnabled())
}

func (s *IOStreams) renderer(w io.Writer, color bool) *lipgloss.Renderer {
	r := lipgloss.NewRenderer(w)
	if color {
		r.SetColorProfile(termenv.ANSI256)
	} else {
		r.SetColorProfile(termenv.Ascii)
	}
	r.SetHasDarkBackground(true)
	return r
}

// CanPrompt reports whether the user can be asked a question: stdin and
// stderr are terminals and prompting was not disabled.
func (s *IOStreams) CanPrompt() bool {
	return s.inTTY && s.errTTY && s.getenv("DEADLETTER_NO_PROMPT") == ""
}

// ShowProgress reports whether progress may be drawn (stderr is a terminal).
func (s *IOStreams) ShowProgress() bool { return s.errTTY }
