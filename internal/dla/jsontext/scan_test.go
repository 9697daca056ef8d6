package jsontext

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// scanSeeds are texts that reach the scanner's corners: every escape at
// several offsets of an 8-byte word, surrogates, numbers, white space,
// nesting at the bound, invalid texts.
var scanSeeds = []string{
	``, ` `, `null`, `true`, `fals`, `0`, `-0`, `01`, `1.`, `1.5e+3`, `-1E-2`, `1e`, `"`, `""`, `"\"`,
	`"\u00e9\ud83d\ude00\ud800x\udc00\ud800\u0041"`, `"\x"`, `"\u12"`, "\"a\x01b\"", "\"\xff\xfe\"",
	`"\"\\\/\b\f\n\r\t"`, `"xxxxxxx\nyyyyyyyy\"zzzzzzzz\\"`, `"0123456\\0123456\"01234567"`,
	`{}`, `[]`, `{"a":1,"a":2,"b":[1,{"c":"d"}]}`, `{"k\u0065y":"v","":0}`, " {\t\"a\" :\r\n[ ] } ",
	`{"a":}`, `[1,]`, `{"a" 1}`, `[1 2]`, `{"a":1} x`, `{"a":[`,
	nested(MaxDepth), nested(MaxDepth + 1), `{"a":"` + nested(MaxDepth+1) + `"}`,
}

// FuzzScanMatchesGjsonAndEncodingJSON: the scanner (through Tape.Check)
// says what gjson.Valid and encoding/json's Valid say of any text, and
// what TooDeepBytes says of its depth; the tape's members and elements
// are those gjson walks, with the same keys and value texts.
func FuzzScanMatchesGjsonAndEncodingJSON(f *testing.F) {
	for _, s := range scanSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var tp Tape
		deep, valid := tp.Check(data, 2)
		if want := TooDeepBytes(data); deep != want {
			t.Fatalf("Check(%q): deep %v, TooDeepBytes %v", data, deep, want)
		}
		if deep {
			if valid {
				t.Fatalf("Check(%q): deep and valid", data)
			}
			return
		}
		if want := gjson.ValidBytes(data); valid != want {
			t.Fatalf("Check(%q): valid %v, gjson.Valid %v", data, valid, want)
		}
		if want := json.Valid(data); valid != want {
			t.Fatalf("Check(%q): valid %v, encoding/json %v", data, valid, want)
		}
		start := 0
		for start < len(data) && IsSpace(data[start]) {
			start++
		}
		if start < len(data) {
			end, ok := ScanValue(data, start, 1)
			if whole := ok && len(bytes.TrimLeft(data[end:], " \t\r\n")) == 0; whole != valid {
				t.Fatalf("ScanValue(%q): ok %v to %d, Check valid %v", data, ok, end, valid)
			}
		}
		if valid {
			checkTape(t, &tp, data, -1, gjson.ParseBytes(data), 1, 2)
		}
	})
}

// checkTape compares the children of node p (at depth) with those gjson
// finds in v, down to keep levels.
func checkTape(t *testing.T, tp *Tape, data []byte, p int, v gjson.Result, depth, keep int) {
	t.Helper()
	if depth > keep || !(v.IsObject() || v.IsArray()) {
		return
	}
	end := len(tp.Nodes)
	if p >= 0 {
		end = tp.Nodes[p].Next
	}
	j := p + 1
	v.ForEach(func(k, val gjson.Result) bool {
		if j >= end {
			t.Fatalf("%q: node %d has fewer children than gjson finds", data, p)
		}
		n := tp.Nodes[j]
		if n.Parent != p || string(data[n.V0:n.V1]) != val.Raw {
			t.Fatalf("%q: node %d (parent %d) holds %q, gjson %q", data, j, n.Parent, data[n.V0:n.V1], val.Raw)
		}
		if v.IsObject() {
			if key := string(UnescapeTo(nil, data[n.K0:n.K1])); key != k.Str || n.KEsc != (bytes.IndexByte(data[n.K0:n.K1], '\\') >= 0) {
				t.Fatalf("%q: node %d has key %q (escaped %v), gjson %q", data, j, key, n.KEsc, k.Str)
			}
			if first := tp.Child(data, p, k.Str); first < 0 || first > j {
				t.Fatalf("%q: Child(%d, %q) = %d, but node %d has that key", data, p, k.Str, first, j)
			}
		} else if n.K0 != 0 {
			t.Fatalf("%q: element node %d has a key", data, j)
		}
		checkTape(t, tp, data, j, val, depth+1, keep)
		j = n.Next
		return true
	})
	if j != end {
		t.Fatalf("%q: node %d has more children than gjson finds", data, p)
	}
}

// FuzzUnescapeString: UnescapeString and UnescapeTo give gjson's value of
// every string, appended to what dst holds, and accept exactly the strings
// gjson.Valid accepts; on strings without surrogate escapes or invalid
// UTF-8 (where gjson's rules are its own), that is encoding/json's value
// too.
func FuzzUnescapeString(f *testing.F) {
	for _, s := range scanSeeds {
		if len(s) >= 2 && s[0] == '"' {
			f.Add(s[1:len(s)-1], 0)
		}
	}
	f.Add(`abc\u00`, 3)
	f.Add(strings.Repeat(`x\n`, 20), 7)
	f.Fuzz(func(t *testing.T, content string, prefix int) {
		prefix = min(max(prefix, 0), 16)
		data := []byte(`"` + content + `"`)
		dst := []byte(strings.Repeat("p", prefix))
		out, next, ok := UnescapeString(data, 1, dst)
		if string(out[:prefix]) != string(dst) {
			t.Fatalf("UnescapeString(%q) overwrote dst: %q", data, out[:prefix])
		}
		out = out[prefix:]
		if want := gjson.ValidBytes(data); (ok && next == len(data)) != want {
			t.Fatalf("UnescapeString(%q): ok %v to %d of %d, gjson.Valid %v", data, ok, next, len(data), want)
		}
		if end, vok := ScanValue(data, 0, 1); vok != ok || (ok && end != next) {
			t.Fatalf("%q: ScanValue ok %v to %d, UnescapeString ok %v to %d", data, vok, end, ok, next)
		}
		if !ok || next != len(data) {
			return
		}
		want := gjson.ParseBytes(data).Str
		if string(out) != want {
			t.Fatalf("UnescapeString(%q) = %q, gjson %q", data, out, want)
		}
		if got := UnescapeTo(nil, []byte(content)); string(got) != want {
			t.Fatalf("UnescapeTo(%q) = %q, gjson %q", content, got, want)
		}
		if utf8.ValidString(content) && !hasSurrogateEscape(content) {
			var s string
			if err := json.Unmarshal(data, &s); err != nil || s != want {
				t.Fatalf("encoding/json reads %q as %q (%v), UnescapeString %q", data, s, err, want)
			}
		}
	})
}

// hasSurrogateEscape reports whether s holds a \u escape of a UTF-16
// surrogate (\uD800 to \uDFFF), which gjson and encoding/json read
// differently when it is not half of a pair.
func hasSurrogateEscape(s string) bool {
	for i := strings.Index(s, `\u`); i >= 0 && i+3 <= len(s); {
		if c := s[i+2]; c == 'd' || c == 'D' {
			return true
		}
		j := strings.Index(s[i+2:], `\u`)
		if j < 0 {
			break
		}
		i += 2 + j
	}
	return false
}

// SyntaxReason gives encoding/json's reason with its offset, or says the
// text is truncated or empty.
func TestSyntaxReason(t *testing.T) {
	for in, want := range map[string]string{
		`{"messageId": "x", "body": "{}"`: "truncated after 31 bytes",
		`{"body": x}`:                     "invalid character 'x' looking for beginning of value at byte 10",
		"   \n":                           "empty",
		`{"a" 1}`:                         "invalid character '1' after object key at byte 6",
	} {
		if got := SyntaxReason([]byte(in)); got != want {
			t.Errorf("SyntaxReason(%q) = %q, want %q", in, got, want)
		}
	}
}
