package iostreams_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/deadletter/deadletter/internal/cli/cmdutil"
	"github.com/deadletter/deadletter/internal/cli/iostreams"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// terminalStreams are test streams whose stdout and stderr both write to
// one terminal, as on an operator's screen.
func terminalStreams(term string) (*iostreams.IOStreams, *strings.Builder) {
	s, _, _, _ := iostreams.Test()
	var screen strings.Builder
	s.Out, s.ErrOut = &screen, &screen
	s.SetTTY(true, true, true)
	s.SetWidth(80)
	s.SetEnv(func(k string) string {
		if k == "TERM" {
			return term
		}
		return ""
	})
	s.EnableStatusLine()
	return s, &screen
}

var status = regexp.MustCompile(`scanning demo-dlq: \d+ of ~\d+ messages`)

func TestEveryWriteToTheTerminalErasesTheProgressLineFirst(t *testing.T) {
	for _, term := range []string{"xterm-256color", "dumb"} {
		s, screen := terminalStreams(term)
		p := cmdutil.NewProgress(s.ErrOut, s.ShowProgress())
		p.Update("scanning demo-dlq: %d of ~%d messages", 1, 500)
		fmt.Fprintln(s.ErrOut, "journal: /tmp/j.ndjson") // a line nobody cleared the progress for
		p.Update("scanning demo-dlq: %d of ~%d messages", 2, 500)
		fmt.Fprintln(s.Out, "data on stdout")
		r := testsupport.Render(screen.String(), 80)
		if glued := testsupport.GluedToStatus(r, status); len(glued) > 0 {
			t.Errorf("TERM=%s: progress glued to a line: %q", term, glued)
		}
		if want := "journal: /tmp/j.ndjson\ndata on stdout"; r.String() != want {
			t.Errorf("TERM=%s: the screen is\n%s\nwant\n%s", term, r, want)
		}
	}
}

func TestAKilledRunLeavesTheCursorOnALineOfItsOwn(t *testing.T) {
	// The shell's "Killed" is printed where the cursor is once the process
	// is gone: at the start of a line, not after the progress text.
	s, screen := terminalStreams("xterm-256color")
	p := cmdutil.NewProgress(s.ErrOut, s.ShowProgress())
	p.Update("replaying: 134 of 362 done")
	r := testsupport.Render(screen.String()+"Killed\n", 80)
	if want := "replaying: 134 of 362 done\nKilled"; r.String() != want {
		t.Errorf("the screen is\n%s\nwant\n%s", r, want)
	}
}

func TestAnEchoedCtrlCIsErasedWithTheProgressLine(t *testing.T) {
	s, screen := terminalStreams("xterm-256color")
	p := cmdutil.NewProgress(s.ErrOut, s.ShowProgress())
	p.Update("replaying: 134 of 362 done")
	screen.WriteString("^C") // the terminal's echo of Ctrl-C
	fmt.Fprintln(s.ErrOut, "pushdlq: interrupted")
	if r := testsupport.Render(screen.String(), 80); r.String() != "pushdlq: interrupted" {
		t.Errorf("the screen is\n%s", r)
	}
}

func TestAProgressLineWiderThanTheTerminalIsCutToOneRow(t *testing.T) {
	s, screen := terminalStreams("xterm-256color")
	p := cmdutil.NewProgress(s.ErrOut, s.ShowProgress())
	p.Update("scanning %s", strings.Repeat("x", 200))
	fmt.Fprintln(s.ErrOut, "done")
	if r := testsupport.Render(screen.String(), 80); r.String() != "done" {
		t.Errorf("the screen is\n%s", r)
	}
}

// `dla search … | head -1`: head prints to the same terminal, where no
// erase of ours reaches; a run that ends within PipedStatusHold must leave
// no status there (it once left "1 match" above head's line).
func TestWithStdoutPipedAQuickRunDrawsNoStatus(t *testing.T) {
	s, _, _, _ := iostreams.Test()
	var screen, pipe strings.Builder
	s.Out, s.ErrOut = &pipe, &screen
	s.SetTTY(true, false, true)
	s.SetWidth(80)
	s.SetEnv(func(string) string { return "xterm-256color" })
	s.EnableStatusLine()
	p := cmdutil.NewProgress(s.ErrOut, s.ShowProgress())
	p.Update("%d match", 1)
	p.Clear()
	if screen.Len() != 0 {
		t.Errorf("a status was drawn within the hold: %q", screen.String())
	}
}
