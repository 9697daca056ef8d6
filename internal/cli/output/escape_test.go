package output

import (
	"bytes"
	"encoding/json"
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
		"sqs/x\u202egpj.exe":              `sqs/x\u202egpj.exe`,
		"isolate \u2066x\u2069":           `isolate \u2066x\u2069`,
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

// TestJSONOut: on a terminal, C1 controls and DEL in JSON become \u
// escapes that decode to the same value, also when a two-byte sequence is
// split across writes; piped, the JSON is written byte for byte.
func TestJSONOut(t *testing.T) {
	value := map[string]string{"v": "csi \u009b2J nel \u0085 del \x7f ünï ¢ \u00a0 \u009f"}
	doc, err := json.Marshal(value)
	if err != nil {
		t.Fatal(err)
	}
	for _, tty := range []bool{false, true} {
		for _, chunk := range []int{len(doc), 1, 3} {
			ios, _, out, _ := iostreams.Test()
			ios.SetTTY(false, tty, false)
			w := JSONOut(ios)
			for rest := doc; len(rest) > 0; {
				n := min(chunk, len(rest))
				if k, err := w.Write(rest[:n]); err != nil || k != n {
					t.Fatalf("Write = %d, %v", k, err)
				}
				rest = rest[n:]
			}
			if !tty {
				if !bytes.Equal(out.Bytes(), doc) {
					t.Errorf("piped, chunks of %d: %q, want %q", chunk, out.Bytes(), doc)
				}
				continue
			}
			for _, raw := range []string{"\u009b", "\u0085", "\u009f", "\x7f"} {
				if strings.Contains(out.String(), raw) {
					t.Errorf("terminal, chunks of %d: raw %q in %q", chunk, raw, out.String())
				}
			}
			var got map[string]string
			if err := json.Unmarshal(out.Bytes(), &got); err != nil || got["v"] != value["v"] {
				t.Errorf("terminal, chunks of %d: %q decodes to %q (%v), want %q", chunk, out.String(), got["v"], err, value["v"])
			}
			if !strings.Contains(out.String(), `\u009b2J`) || !strings.Contains(out.String(), "ünï ¢ \u00a0") {
				t.Errorf("terminal, chunks of %d: %q", chunk, out.String())
			}
		}
	}
}
