package jsontext

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/tidwall/pretty"
)

// hostileDepth is the depth of the objects that crashed every command with
// a fatal stack overflow: 10 million levels, 20 MB of brackets.
const hostileDepth = 10_000_000

// nested is n arrays, one inside the other.
func nested(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }

// The bound is exact, and brackets inside strings (escaped quotes
// included) do not count.
func TestTooDeepBoundary(t *testing.T) {
	for _, c := range []struct {
		name string
		raw  string
		deep bool
	}{
		{"512 levels", nested(MaxDepth), false},
		{"513 levels", nested(MaxDepth + 1), true},
		{"513 levels of objects", strings.Repeat(`{"k":`, MaxDepth+1) + "0" + strings.Repeat("}", MaxDepth+1), true},
		{"brackets in a string", `{"a":"` + strings.Repeat("[{", 100_000) + `"}`, false},
		{"after an escaped quote", `{"a":"\"` + strings.Repeat("[", 100_000) + `"}`, false},
		{"after an escaped backslash", `{"a":"\\","b":` + nested(MaxDepth+1) + `}`, true},
		{"deep but unbalanced text in a string", `{"a":"` + strings.Repeat("]", 1000) + `","b":` + nested(MaxDepth+1) + `}`, true},
		{"many shallow objects", "[" + strings.Repeat(`{"a":[1]},`, 100_000) + "0]", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := TooDeep(c.raw); got != c.deep {
				t.Errorf("TooDeep = %v, want %v", got, c.deep)
			}
			if got := TooDeepBytes([]byte(c.raw)); got != c.deep {
				t.Errorf("TooDeepBytes = %v, want %v", got, c.deep)
			}
		})
	}
	if Valid(nested(MaxDepth+1)) || !Valid(nested(MaxDepth)) || ValidBytes([]byte(nested(hostileDepth))) {
		t.Error("Valid does not apply the bound")
	}
}

// DepthReason names the bound.
func TestDepthReasonNamesMaxDepth(t *testing.T) {
	if want := fmt.Sprintf("nested deeper than %d levels", MaxDepth); DepthReason != want {
		t.Errorf("DepthReason = %q, want %q", DepthReason, want)
	}
}

// FuzzNestingScan checks the bracket scan against encoding/json's tokenizer
// on valid JSON, with a small bound so that the fuzzer reaches it.
func FuzzNestingScan(f *testing.F) {
	for _, s := range []string{`{}`, `[[1],[[2]]]`, `{"a":"[[[\"]]","b":[{"c":[]}]}`, `["\\",[[[]]]]`, `"[[[["`, `{"k":{"k":{"k":{"k":1}}}}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !json.Valid([]byte(s)) {
			return
		}
		dec := json.NewDecoder(strings.NewReader(s))
		depth, deepest := 0, 0
		for {
			tok, err := dec.Token()
			if err != nil {
				break
			}
			switch tok {
			case json.Delim('['), json.Delim('{'):
				depth++
				deepest = max(deepest, depth)
			case json.Delim(']'), json.Delim('}'):
				depth--
			}
		}
		for _, limit := range []int{0, 1, 2, 3} {
			if got := deeperThan(s, limit); got != (deepest > limit) {
				t.Errorf("deeperThan(%q, %d) = %v, depth %d", s, limit, got, deepest)
			}
		}
	})
}

// FuzzIndentedSize: IndentedSize bounds what a printer writes of any valid
// text (but the first line's prefix and the final newline), one value a
// line with the prefix and indent it is given (show's printer,
// tidwall/pretty); dla's TestIndentedSizeBoundsThePrinter checks it on the
// archive fixture.
func FuzzIndentedSize(f *testing.F) {
	for _, s := range []string{`{}`, `[]`, `{"a":[1,2,{"b":"x,[y]"}],"c":{"d":null}}`, nested(300),
		"[" + strings.Repeat(`{"k":"v","n":[1,2,3]},`, 5) + "0]", strings.Repeat("[", 10) + strings.Repeat(`"\"],",`, 10) + "0" + strings.Repeat("]", 10)} {
		f.Add(s, 2, 2)
	}
	f.Fuzz(func(t *testing.T, s string, prefix, indent int) {
		prefix, indent = min(max(prefix, 0), 8), min(max(indent, 0), 8)
		if !Valid(s) {
			return
		}
		out := pretty.PrettyOptions([]byte(s), &pretty.Options{Width: 100, Prefix: strings.Repeat(" ", prefix), Indent: strings.Repeat(" ", indent)})
		// The bound leaves out the first line's prefix and the final
		// newline: all a bare number or string is printed with ("0": 1).
		if n := IndentedSize(s, prefix, indent); n+int64(prefix)+1 < int64(len(out)) {
			t.Fatalf("IndentedSize(%q, %d, %d) = %d < %d printed", s, prefix, indent, n, len(out))
		}
	})
}
