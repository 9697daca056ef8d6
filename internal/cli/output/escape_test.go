package output

import (
	"strings"
	"testing"

	"github.com/mattn/go-runewidth"

	"github.com/deadletter/deadletter/internal/cli/iostreams"
)

func TestEscape(t *testing.T) {
	for in, want := range map[string]string{
		"plain text, ünïcödé … ✓":         "plain text, ünïcödé … ✓",
		"tab\tand\nnewline stay":          "tab\tand\nnewline stay",
		"title\x1b]0;pwned\x07":           `title\x1b]0;pwned\x07`,
		"clear\x1b[2J\x1b[H":              `clear\x1b[2J\x1b[H`,
		"cr\roverwrites":                  `cr\x0doverwrites`,
		"del\x7f":                         `del\x7f`,
		"c1 csi \u009b31m and \u0085 nel": `c1 csi \u009b31m and \u0085 nel`,
		"bad utf-8 \x9b\xff":              `bad utf-8 \x9b\xff`,
		"":                                "",
	} {
		if got := Escape(in); got != want {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestEscapeForAndTerminalOut(t *testing.T) {
	hostile := "a\x1b[2Jb\n"
	if got := EscapeFor(false)(hostile); got != hostile {
		t.Errorf("piped: %q", got)
	}
	if got := EscapeFor(true)(hostile); got != `a\x1b[2Jb`+"\n" {
		t.Errorf("terminal: %q", got)
	}
	for _, tty := range []bool{false, true} {
		ios, _, out, _ := iostreams.Test()
		ios.SetTTY(false, tty, false)
		n, err := TerminalOut(ios).Write([]byte(hostile))
		if err != nil || n != len(hostile) {
			t.Fatalf("Write = %d, %v", n, err)
		}
		if want := EscapeFor(tty)(hostile); out.String() != want {
			t.Errorf("tty %v: wrote %q, want %q", tty, out.String(), want)
		}
	}
}

func TestTerminalTableEscapesAndFits(t *testing.T) {
	ios, _, out, _ := iostreams.Test()
	ios.SetTTY(false, true, false)
	ios.SetEnv(func(k string) string { return map[string]string{"NO_COLOR": "1"}[k] })
	ios.SetWidth(40)
	tbl := NewTable(ios, "KEY", "N", "ERROR")
	tbl.Row("sqs/2024-03-02/"+strings.Repeat("k", 40), "1", "Boom\x1b]0;pwned\x07 "+strings.Repeat("e", 40))
	tbl.Row("short", "22", "ok")
	if err := tbl.Flush(); err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(out.String(), "\x1b\x07") {
		t.Errorf("raw controls in the terminal table:\n%q", out.String())
	}
	for _, l := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		if w := runewidth.StringWidth(l); w > 40 {
			t.Errorf("line %d columns wide in a 40-column terminal: %q", w, l)
		}
	}
	if !strings.Contains(out.String(), `Boom\x1b`) || !strings.Contains(out.String(), "…") || !strings.Contains(out.String(), " short ") || !strings.Contains(out.String(), " 22 ") {
		t.Errorf("table:\n%s", out.String())
	}
}

func TestPlural(t *testing.T) {
	for _, c := range []struct {
		n    int
		word string
		want string
	}{
		{1, "match", "1 match"}, {0, "match", "0 matches"}, {2, "object", "2 objects"}, {1, "object", "1 object"},
		{3, "entry", "3 entries"}, {2, "day", "2 days"}, {2, "box", "2 boxes"}, {5, "more unreadable object", "5 more unreadable objects"},
	} {
		if got := Plural(c.n, c.word); got != c.want {
			t.Errorf("Plural(%d, %q) = %q, want %q", c.n, c.word, got, c.want)
		}
	}
}
