package testsupport

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/creack/pty"
)

// PTY says how RunPTY runs a binary on a pseudo-terminal.
type PTY struct {
	Cols, Rows int      // the terminal's size (Rows 0: 40)
	Env        []string // added to the environment (after TERM=xterm-256color)
	Dir        string
	// PipeStdout sends stdout to a pipe (PTYResult.Stdout) while stdin and
	// stderr stay on the terminal: `dla search … | less` as an operator
	// types it.
	PipeStdout bool
	// Answers are typed, each once and in turn, when the terminal shows its
	// Prompt (a confirmation such as `Type "yes" to continue:`).
	Answers []PTYAnswer
	Timeout time.Duration // 0: 60 s; the run is killed and the test fails past it
}

// PTYAnswer is what to type once the terminal shows Prompt: Reply and
// Enter, or Reply alone with Keys (a Ctrl-C is "\x03": an operator does
// not press Enter after it, and the terminal would echo the Enter as a new
// line).
type PTYAnswer struct {
	Prompt, Reply string
	Keys          bool
}

// PTYResult is what a run on a pseudo-terminal printed.
type PTYResult struct {
	Screen string // everything written to the terminal, with its \r\n as \n
	Stdout string // what went to the pipe (PipeStdout)
	Code   int
	Cols   int
}

// ptyEnvDropped are the variables of the test's own environment a run on a
// terminal must not inherit: they decide colour and width.
var ptyEnvDropped = []string{"TERM", "NO_COLOR", "CLICOLOR", "CLICOLOR_FORCE", "COLUMNS", "LINES", "DEADLETTER_NO_PROMPT"}

// RunPTY runs bin with args on a new pseudo-terminal of opt.Cols columns,
// its stdin, stdout and stderr the terminal (stdout a pipe with
// PipeStdout), TERM=xterm-256color, and returns all it printed once it has
// exited. Prompts are answered as opt.Answers say; a run still going after
// the timeout is killed (with its process group) and fails the test with
// the screen so far.
func RunPTY(t testing.TB, bin string, opt PTY, args ...string) PTYResult {
	t.Helper()
	if opt.Rows == 0 {
		opt.Rows = 40
	}
	if opt.Timeout == 0 {
		opt.Timeout = 60 * time.Second
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = opt.Dir
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		drop := false
		for _, d := range ptyEnvDropped {
			drop = drop || name == d
		}
		if !drop {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(append(cmd.Env, "TERM=xterm-256color"), opt.Env...)
	var stdout bytes.Buffer
	if opt.PipeStdout {
		cmd.Stdout = &stdout
	}
	// The terminal's other end is kept open here until the command has
	// exited (pty.StartWithSize closes it once the command starts): the
	// master's read then ends with EIO only after what the command printed
	// last was read. With the command's close the last, the kernel could
	// answer EIO while its last line was still on its way, and a screen
	// lacked it.
	master, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	defer tty.Close()
	if err := pty.Setsize(master, &pty.Winsize{Cols: uint16(opt.Cols), Rows: uint16(opt.Rows)}); err != nil {
		t.Fatal(err)
	}
	if cmd.Stdout == nil {
		cmd.Stdout = tty
	}
	cmd.Stdin, cmd.Stderr = tty, tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	var screen bytes.Buffer
	read := make(chan struct{})
	go func() {
		defer close(read)
		buf := make([]byte, 32<<10)
		answered, from := 0, 0
		for {
			n, err := master.Read(buf)
			mu.Lock()
			screen.Write(buf[:n])
			if answered < len(opt.Answers) {
				if i := bytes.Index(screen.Bytes()[from:], []byte(opt.Answers[answered].Prompt)); i >= 0 {
					from += i + len(opt.Answers[answered].Prompt)
					if a := opt.Answers[answered]; a.Keys {
						io.WriteString(master, a.Reply)
					} else {
						io.WriteString(master, a.Reply+"\r")
					}
					answered++
				}
			}
			mu.Unlock()
			if err != nil { // EIO once the last holder of the terminal closed it
				return
			}
		}
	}()
	done := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		tty.Close() // the last holder: the reader reads what is left, then EIO
		<-read
		done <- err
	}()
	select {
	case err = <-done:
	case <-time.After(opt.Timeout):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("%s %s did not end within %s on a %d-column terminal; it printed:\n%s", bin, strings.Join(args, " "), opt.Timeout, opt.Cols, screen.String())
	}
	res := PTYResult{Screen: strings.ReplaceAll(screen.String(), "\r\n", "\n"), Stdout: stdout.String(), Cols: opt.Cols}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		res.Code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return res
}

// literalEscapes are an escape sequence printed as text: its ESC written
// as \x1b, \033, \e, \u001b or ^[, or lost altogether before an SGR's
// parameters (`[33mfix-first[0m`).
var literalEscapes = regexp.MustCompile(`\\x1[bB]|\\033|\\e\[|\\u001[bB]|\\U0000001[bB]|\^\[\[|(?:^|[^\x1b])\[[0-9;]{1,16}m`)

// LiteralEscapes are the places where text shows an escape sequence as
// text instead of sending it to the terminal, each with the line it is on.
// Archived text that holds control characters is escaped on purpose
// (docs/output-and-errors.md): run this on screens of archives and queues
// without any.
func LiteralEscapes(text string) []string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if m := literalEscapes.FindString(l); m != "" {
			out = append(out, fmt.Sprintf("%q in %q", m, l))
		}
	}
	return out
}

// sgr is a Select Graphic Rendition sequence: colour, bold, reset.
var sgr = regexp.MustCompile("\x1b\\[[0-9;:]*m")

// HasSGR reports whether text holds a real SGR sequence (colour or style).
func HasSGR(text string) bool { return sgr.MatchString(text) }

// ScreenLines are what a terminal shows of text line by line: each line is
// split at carriage returns as well (a progress line redrawn in place is
// one screen line per redraw), and each piece is returned with its escape
// sequences (for a check of colour) and measured without them.
func ScreenLines(text string) []ScreenLine {
	var out []ScreenLine
	for i, l := range strings.Split(text, "\n") {
		for _, piece := range strings.Split(l, "\r") {
			if piece == "" {
				continue
			}
			plain := ansi.Strip(piece)
			out = append(out, ScreenLine{Line: i + 1, Raw: piece, Plain: plain, Width: ansi.StringWidth(plain)})
		}
	}
	return out
}

// ScreenLine is one line of a screen (see ScreenLines).
type ScreenLine struct {
	Line  int    // its line number in the output, from 1
	Raw   string // as printed, escape sequences and all
	Plain string // without escape sequences
	Width int    // Plain's width in terminal cells
}

// commandStart is a command to copy at the start of a line, after its
// indentation and a short label (`$ `, `next: `, `then: `, `run: `).
var commandStart = regexp.MustCompile(`^\s*(?:(?:\$|next:|then:|run:)\s+)*(?:dla|pushdlq) `)

// IsCommandLine reports whether a screen line is a command to copy: after
// its indentation (and a label such as `next: `) it starts with `dla ` or
// `pushdlq `, or it follows a line that ends with `next:`. Such a line is
// never cut to fit the terminal.
func IsCommandLine(prev, line string) bool {
	if commandStart.MatchString(line) {
		return true
	}
	return strings.HasSuffix(strings.TrimSpace(prev), "next:")
}

// HoldsOneUncuttableWord reports whether a line is wider than cols only by
// one word that cannot be cut without losing it (a key, an ARN, a URL, a
// path): the line without its widest word fits.
func HoldsOneUncuttableWord(line string, cols int) bool {
	widest := 0
	for _, w := range strings.Fields(line) {
		widest = max(widest, ansi.StringWidth(w))
	}
	return ansi.StringWidth(line)-widest <= cols
}

// TooWide are the screen lines of text wider than cols that are neither
// commands (IsCommandLine) nor wide only by a word that cannot be cut, each
// quoted with its width.
func TooWide(text string, cols int) []string {
	var out []string
	prev := ""
	for _, l := range ScreenLines(text) {
		if l.Width > cols && !IsCommandLine(prev, l.Plain) && !HoldsOneUncuttableWord(l.Plain, cols) {
			out = append(out, fmt.Sprintf("line %d, %d columns: %q", l.Line, l.Width, l.Plain))
		}
		prev = l.Plain
	}
	return out
}

// CommandOnItsOwnLine reports whether the screen shows command whole on a
// line of its own: the line holds the command and nothing else but its
// indentation and a short label (`next: `, `$ `).
func CommandOnItsOwnLine(screen, command string) bool {
	for _, l := range ScreenLines(screen) {
		s := strings.TrimSpace(l.Plain)
		label, ok := strings.CutSuffix(s, command)
		if !ok {
			continue
		}
		label = strings.TrimSpace(label)
		if label == "" || label == "$" || (strings.HasSuffix(label, ":") && len(strings.Fields(label)) <= 2) {
			return true
		}
	}
	return false
}

// CheckScreen fails the test for each escape sequence printed as text and
// each line wider than the terminal that is not a command.
func CheckScreen(t testing.TB, what string, r PTYResult) {
	t.Helper()
	for _, s := range [][]string{LiteralEscapes(r.Screen), LiteralEscapes(r.Stdout)} {
		for _, e := range s {
			t.Errorf("%s: escape sequence printed as text: %s", what, e)
		}
	}
	for _, l := range TooWide(r.Screen, r.Cols) {
		t.Errorf("%s: wider than the %d-column terminal: %s", what, r.Cols, l)
	}
	if t.Failed() {
		t.Logf("%s: the screen:\n%s", what, r.Screen)
	}
}

// PTYWidths are the terminal widths every verb is tried at.
var PTYWidths = []int{80, 120, 200}

// PTYVerb is a verb tried on a terminal (RunOnTerminals).
type PTYVerb struct {
	Name string
	// Run gives the verb's arguments and the answers it needs, once per
	// run: a verb that changes what it works on gets a fresh copy each time.
	Run   func(t *testing.T) (args []string, answers []PTYAnswer)
	Env   []string // added to each run's environment
	Codes []int    // the exit codes it may end with
	// Colour says it colours its output on a terminal (a table's header,
	// a bar, a badge).
	Colour bool
	// Check, when set, asserts what the verb must show beyond the common
	// checks, at each width.
	Check func(t *testing.T, r PTYResult)
}

// RunOnTerminals runs a verb of bin on a terminal at each of PTYWidths,
// then at 120 columns with NO_COLOR=1, with TERM=dumb, and with its stdout
// piped, and checks each screen (CheckScreen), its exit code, that it has
// colour where v.Colour says so and none without colour, and that the
// pipe gets no escape sequence.
func RunOnTerminals(t *testing.T, bin string, v PTYVerb) {
	t.Helper()
	name := filepath.Base(bin)
	run := func(opt PTY) (string, PTYResult) {
		t.Helper()
		args, answers := v.Run(t)
		opt.Answers, opt.Env = answers, append(slices.Clone(v.Env), opt.Env...)
		r := RunPTY(t, bin, opt, args...)
		what := strings.TrimSpace(strings.Join(opt.Env[len(v.Env):], " ") + " " + name + " " + strings.Join(args, " "))
		if opt.PipeStdout {
			what += " | cat"
		}
		if !slices.Contains(v.Codes, r.Code) {
			t.Errorf("%s: exit %d, want one of %v:\n%s", what, r.Code, v.Codes, r.Screen)
		}
		CheckScreen(t, what, r)
		return what, r
	}
	for _, cols := range PTYWidths {
		what, r := run(PTY{Cols: cols})
		if v.Colour && !HasSGR(r.Screen) {
			t.Errorf("%s at %d columns: no colour on a terminal", what, cols)
		}
		if v.Check != nil {
			v.Check(t, r)
		}
	}
	for _, env := range []string{"NO_COLOR=1", "TERM=dumb"} {
		if what, r := run(PTY{Cols: 120, Env: []string{env}}); HasSGR(r.Screen) {
			t.Errorf("%s: colour on the terminal:\n%q", what, r.Screen)
		}
	}
	if what, r := run(PTY{Cols: 120, PipeStdout: true}); strings.Contains(r.Stdout, "\x1b") {
		t.Errorf("%s: an escape sequence in piped output:\n%q", what, r.Stdout)
	}
}
