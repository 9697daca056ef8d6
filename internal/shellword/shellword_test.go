package shellword

import (
	"math/rand"
	"os/exec"
	"reflect"
	"strings"
	"testing"
)

// Any words, any bytes: what Join prints, Split reads back exactly.
func TestSplitReadsBackWhatJoinPrintsForAnyBytes(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	alphabet := []byte("aZ09 -_./:=+,@'\"\\$`;|&<>()*?[]\t\n\r\x00\x01\x1b\x7f\x80\x9f\xc3\xa9\xe2\x80\xa8\xff{}~!#%^")
	for i := 0; i < 5000; i++ {
		words := make([]string, 1+rng.Intn(4))
		for j := range words {
			b := make([]byte, rng.Intn(12))
			for k := range b {
				b[k] = alphabet[rng.Intn(len(alphabet))]
			}
			words[j] = string(b)
		}
		line := Join(words...)
		got, err := Split(line)
		if err != nil || !reflect.DeepEqual(got, words) {
			t.Fatalf("Split(Join(%q)) = %q, %v (line %q)", words, got, err, line)
		}
	}
}

// What Join prints, bash reads as the same words (when bash is here).
func TestBashReadsJoinedWordsAsTheyWere(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	words := []string{"plain", "with space", "it's", "$HOME", "a\nb", "\xff\x00x"[0:1] + "y", "é", "`x`", "*"}
	// A NUL cannot be an argument; the rest can.
	out, err := exec.Command(bash, "-c", `printf '%s\0' `+Join(words...)).Output()
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if !reflect.DeepEqual(got, words) {
		t.Errorf("bash read %q, want %q", got, words)
	}
}

func TestSplitRefusesWhatItWouldHaveToExpand(t *testing.T) {
	for _, line := range []string{"dla $X", "a; rm", "a | b", `"$(x)"`, "'open", `"open`, "$'open"} {
		if _, err := Split(line); err == nil {
			t.Errorf("Split(%q) did not refuse", line)
		}
	}
}

// What a terminal would rearrange or reinterpret is never left raw in a
// quoted word: bidi controls and line separators are written as bytes,
// and a word starting with '=' is quoted (zsh expands =cmd to a path).
func TestQuoteLeavesNothingATerminalOrZshReinterprets(t *testing.T) {
	for _, w := range []string{"a\u202eb", "x\u2066y", "l\u2028m", "p\u2029q", "r\u200fs"} {
		q := Quote(w)
		if strings.ContainsAny(q, "\u202e\u2066\u2028\u2029\u200f") || !strings.HasPrefix(q, "$'") {
			t.Errorf("Quote(%q) = %q: not written as bytes", w, q)
		}
		if got, err := Split(q); err != nil || len(got) != 1 || got[0] != w {
			t.Errorf("Split(Quote(%q)) = %q, %v", w, got, err)
		}
	}
	if q := Quote("=ls"); q != "'=ls'" {
		t.Errorf("Quote(=ls) = %s, want it quoted", q)
	}
	if q := Quote("a=b"); q != "a=b" {
		t.Errorf("Quote(a=b) = %s: an inner '=' needs no quotes", q)
	}
}
