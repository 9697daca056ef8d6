package dla

import (
	"strings"
	"testing"
)

// TestDecodeMatchesReferenceTwoByteEscapes: every two-byte escape (and a
// \u escape) of a body at each offset of an 8-byte word, inside a string
// value and between tokens, in a body of one and of two layers and in a
// Cumulus message held as a string: unescapeString replaces these in its
// word loop, away from the end of the text, where the other tests seldom
// put them.
func TestDecodeMatchesReferenceTwoByteEscapes(t *testing.T) {
	escapes := []string{`\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t`, `\u0041`, `\u000a`}
	pad := strings.Repeat("y", 40)
	var in []string
	for _, e := range escapes {
		for off := range 17 {
			x := strings.Repeat("x", off)
			// e inside the inner string value, and between its tokens.
			bodies := []string{
				`{\"k\":\"` + x + e + pad + `\",\"z\":1}`,
				`{\"k\":\"` + x + `\",` + e + `\"z\":1,\"p\":\"` + pad + `\"}`,
				`{\"k\":\"` + x + e + `\\` + e + pad + `\"}`,
			}
			for _, b := range bodies {
				one := `{"messageId":"m","Body":"` + b + `","attr":"` + pad + `"}`
				in = append(in, one, `{"body":`+jsq(one)+`,"attr":"`+pad+`"}`)
			}
			// The Cumulus message, a string in detail, unescaped in the
			// layer's scan (status first) and after it (status last).
			msg := `{\"meta\":{\"collection\":{\"name\":\"` + x + e + `N\",\"version\":\"1\"}},\"payload\":{\"granules\":[{\"granuleId\":\"G` + x + e + pad + `\"}]}}`
			in = append(in,
				`{"detail":{"status":"SUCCEEDED","output":"`+msg+`","pad":"`+pad+`"}}`,
				`{"detail":{"output":"`+msg+`","status":"SUCCEEDED","pad":"`+pad+`"}}`)
		}
	}
	ok := 0
	for i, s := range in {
		if diff := sameDecode([]byte(s)); diff != "" {
			t.Errorf("input %d %q: %s", i, s, diff)
		}
		if _, err := Decode([]byte(s)); err == nil {
			ok++
		}
	}
	if ok < len(in)/3 {
		t.Fatalf("only %d of %d inputs decoded: the table should mostly exercise valid bodies", ok, len(in))
	}
}
