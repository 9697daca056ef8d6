package output

import (
	"strings"
	"testing"
)

// TestFold pins the one folding: a break only before a word that would
// pass the width, the prefixes counted, a word wider than a line alone on
// its own, and the words joined by one space.
func TestFold(t *testing.T) {
	for _, c := range []struct {
		words       []string
		width       int
		first, rest string
		want        string
	}{
		{[]string{"aa", "bb", "cc"}, 8, "", "", "aa bb cc"},
		{[]string{"aa", "bb", "cc"}, 7, "", "", "aa bb\ncc"},
		{[]string{"aa", "bb", "cc"}, 7, "> ", "  ", "> aa bb\n  cc"},
		{[]string{"aa", "verywideword", "cc"}, 6, "", "", "aa\nverywideword\ncc"},
		{[]string{"verywideword"}, 4, "  ", "  ", "  verywideword"},
		{nil, 10, "lead: ", "", "lead: "},
		// The recover plan's list: items holding spaces stay whole.
		{[]string{"2 written,", "1 dropped,", "0 failed"}, 24, "x: ", "    ", "x: 2 written, 1 dropped,\n    0 failed"},
	} {
		if got := Fold(c.words, c.width, c.first, c.rest); got != c.want {
			t.Errorf("Fold(%q, %d, %q, %q) = %q, want %q", c.words, c.width, c.first, c.rest, got, c.want)
		}
	}
}

// TestWrapAndFieldsEdges pins where Wrap (a triage's verdicts, a trace)
// and Fields (show's error lines, recover's errors) differ, as their
// callers always had it: Wrap keeps a run of spaces (empty words) and
// folds at a width of 0 or less; Fields keeps a text that fits, or any
// text at a width of 0 or less, as it is, and drops the runs of white
// space of one it folds.
func TestWrapAndFieldsEdges(t *testing.T) {
	if got := Wrap("a  b", 10, "", ""); got != "a  b" {
		t.Errorf("Wrap kept %q, want the two spaces", got)
	}
	if got := Wrap("aa bb", 0, "", ""); got != "aa\nbb" {
		t.Errorf("Wrap at width 0 = %q, want a word a line", got)
	}
	if got := Wrap("aaaa  bb", 5, "", ""); got != "aaaa \nbb" {
		t.Errorf("Wrap of a run of spaces = %q", got)
	}
	fold := func(s string, width int) string { return Fold(Fields(s, width-2), width, "  ", "  ") }
	if got := fold("    at f (x.js:1)", 40); got != "      at f (x.js:1)" {
		t.Errorf("a line that fits lost its indentation: %q", got)
	}
	if got := fold("a\tb  c d", 0); got != "  a\tb  c d" {
		t.Errorf("not folded (width 0): %q", got)
	}
	if got := fold("  aaaa\tbbbb  cccc  ", 12); got != "  aaaa bbbb\n  cccc" {
		t.Errorf("a folded line = %q, want its runs of white space gone", got)
	}
	if got := fold(strings.Repeat(" ", 20), 10); got != "  " {
		t.Errorf("only spaces, folded: %q", got)
	}
}

func TestHumanBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB", 5 << 20: "5.0 MiB", 3 << 30: "3.0 GiB"} {
		if got := HumanBytes(n); got != want {
			t.Errorf("HumanBytes(%d) = %q, want %q", n, got, want)
		}
	}
}
