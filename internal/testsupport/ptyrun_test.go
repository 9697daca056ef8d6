package testsupport

import (
	"strings"
	"testing"
)

// A run on the pseudo-terminal sees a terminal of the size asked for, and
// a prompt is answered.
func TestRunPTYSizeAndAnswer(t *testing.T) {
	r := RunPTY(t, "/bin/sh", PTY{Cols: 97, Answers: []PTYAnswer{{Prompt: "continue:", Reply: "yes"}}},
		"-c", `stty size; [ -t 1 ] && echo tty; printf 'Type "yes" to continue: '; read a; echo "got $a"; printf '\033[31mred\033[0m\n'; exit 3`)
	if r.Code != 3 || !strings.Contains(r.Screen, "40 97\n") || !strings.Contains(r.Screen, "tty\n") || !strings.Contains(r.Screen, "got yes\n") {
		t.Fatalf("exit %d, screen %q", r.Code, r.Screen)
	}
	if !HasSGR(r.Screen) || LiteralEscapes(r.Screen) != nil {
		t.Errorf("colour %v, literal escapes %v", HasSGR(r.Screen), LiteralEscapes(r.Screen))
	}
	r = RunPTY(t, "/bin/sh", PTY{Cols: 80, PipeStdout: true}, "-c", `[ -t 1 ] || echo piped; echo err >&2`)
	if r.Stdout != "piped\n" || r.Screen != "err\n" {
		t.Errorf("piped stdout %q, screen %q", r.Stdout, r.Screen)
	}
}

func TestScreenChecks(t *testing.T) {
	for _, s := range []string{`28  \x1b[33mfix-first\x1b[0m`, `\033[1mKEY`, `[91mpermanent[0m`, `\u001b[2m`} {
		if LiteralEscapes(s) == nil {
			t.Errorf("%q: no literal escape found", s)
		}
	}
	if e := LiteralEscapes("\x1b[33mfix-first\x1b[0m [1] a[b]"); e != nil {
		t.Errorf("real SGR taken for text: %v", e)
	}
	long := strings.Repeat("word ", 30)
	key := "demo/dead-letter-archive/sqs/2024-03-03/" + strings.Repeat("x", 70)
	screen := strings.Join([]string{
		"\x1b[1m" + strings.Repeat("a", 80) + "\x1b[0m", // 80 columns: fits
		long,                                  // 150 columns of prose: too wide
		"dla: unreadable " + key + ": empty",  // wide by one key only
		"    dla recover --archive x " + long, // a command
		"next:", long,                         // a command after next:
		"progress 1\r" + long + "\rprogress 3", // a redraw too wide
		strings.Repeat("漢字 ", 17),              // 85 columns, 2 a character
	}, "\n")
	got := TooWide(screen, 80)
	if len(got) != 3 || !strings.Contains(got[0], "line 2,") || !strings.Contains(got[1], "line 7,") || !strings.Contains(got[2], "line 8, 85 columns") {
		t.Errorf("too wide: %q", got)
	}
	cmd := "dla search --archive 'a b' -o keys"
	for screen, want := range map[string]bool{
		"  " + cmd + "\n":                  true,
		"  next: " + cmd + "\n":            true,
		"x  e.g. key  next: " + cmd + "\n": false,
		"  " + cmd[:20] + "…\n":            false,
	} {
		if CommandOnItsOwnLine(screen, cmd) != want {
			t.Errorf("%q: on its own line %v, want %v", screen, !want, want)
		}
	}
}
