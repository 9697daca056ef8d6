package jsontext

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"reflect"
	"strconv"
	"testing"
)

// The expected texts are what Node.js prints for
// JSON.stringify(JSON.parse(in)).
func TestStringifyIsJavaScripts(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"repeated key: first place, last value", `{"b":1,"a":2,"b":3}`, `{"b":3,"a":2}`},
		{"array-index keys first, numerically", `{"a":1,"10":2,"2":3,"01":4,"4294967295":5,"4294967294":6}`,
			`{"2":3,"10":2,"4294967294":6,"a":1,"01":4,"4294967295":5}`},
		{"numbers", `[1.0,1e21,1e20,123456789012345678901,12345678901234567890,0.000001,1e-7,-0,1E+2,5e-324,1e400,-1e400,0.1,-1.5e-10]`,
			`[1,1e+21,100000000000000000000,123456789012345680000,12345678901234567000,0.000001,1e-7,0,100,5e-324,null,null,0.1,-1.5e-10]`},
		{"strings", `"\u00e9\u2028<>&\/\ud83d\ude00\ud800x\u001F\u007f\"\\\b\f\n\r\t"`,
			"\"é\u2028<>&/😀\\ud800x\\u001f\x7f\\\"\\\\\\b\\f\\n\\r\\t\""},
		{"lone low surrogate, then a pair", `"\udc00\ud83d\ude00\ud83d"`, `"\udc00😀\ud83d"`},
		{"bytes that are not UTF-8", "\"a\xffb\"", "\"a\uFFFDb\""},
		{"more numbers", `[123e-20,1e-6,1.5e300,2e-7,9007199254740993,0.1e1,100e-2,1e21,999999999999999999999,4.35,0.000001234]`,
			`[1.23e-18,0.000001,1.5e+300,2e-7,9007199254740992,1,1,1e+21,1e+21,4.35,0.000001234]`},
		{"white space and nesting", " { \"a\" : [ 1 , { } , [ ] , true , false , null ] } ", `{"a":[1,{},[],true,false,null]}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := Stringify(c.in)
			if err != nil || got != c.want {
				t.Errorf("Stringify(%s) = %s, %v; want %s", c.in, got, err, c.want)
			}
		})
	}
	for _, bad := range []string{``, `{`, `{"a":}`, `[1,]`, `01`, `"\x"`, `{"a":1} x`, `"a` + "\n" + `"`, `-`, `1.`, `1e`} {
		if got, err := Stringify(bad); err == nil {
			t.Errorf("Stringify(%q) = %q, want an error", bad, got)
		}
	}
}

func TestQuoteJSEscapesOnlyWhatJavaScriptDoes(t *testing.T) {
	if got, want := QuoteJS("<&>\u2028\"\\\x01é"), "\"<&>\u2028\\\"\\\\\\u0001é\""; got != want {
		t.Errorf("QuoteJS = %s, want %s", got, want)
	}
}

// TestStringifyMatchesNode compares Stringify with what Node.js printed for
// 800 random texts (testdata/stringify-cases.js wrote them).
func TestStringifyMatchesNode(t *testing.T) {
	b, err := os.ReadFile("testdata/stringify-node.json")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Node  string
		Cases []struct{ In, Want string }
	}
	if err := json.Unmarshal(b, &f); err != nil || len(f.Cases) < 800 {
		t.Fatalf("%d cases: %v", len(f.Cases), err)
	}
	for _, c := range f.Cases {
		if got, err := Stringify(c.In); err != nil || got != c.Want {
			t.Errorf("Stringify(%s) = %s, %v; Node %s printed %s", c.In, got, err, f.Node, c.Want)
		}
	}
}

// FuzzStringifyRoundTrip: Stringify accepts exactly the texts
// encoding/json accepts (and refuses those nested too deep); what it
// writes is valid JSON that reads back as the same value (numbers as
// doubles, as JavaScript reads them), and writing it again changes
// nothing.
func FuzzStringifyRoundTrip(f *testing.F) {
	for _, s := range scanSeeds {
		f.Add(s)
	}
	for _, s := range []string{`{"b":1,"a":2,"b":3}`, `{"10":1,"2":2,"a":3,"01":4}`, `[1.0,1e21,12345678901234567890,1e400,-0,5e-324]`,
		`"\ud800\ud83d\ude00\udc00"`, "\"\xff\u2028\""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		out, err := Stringify(text)
		if TooDeep(text) {
			if err == nil {
				t.Fatalf("Stringify of a text nested too deep: %.100q", out)
			}
			return
		}
		if valid := json.Valid([]byte(text)); (err == nil) != valid {
			t.Fatalf("Stringify(%q): %v; encoding/json valid %v", text, err, valid)
		}
		if err != nil {
			if !errors.Is(err, ErrNotJSON) {
				t.Fatalf("Stringify(%q): %v, not ErrNotJSON", text, err)
			}
			return
		}
		if !json.Valid([]byte(out)) {
			t.Fatalf("Stringify(%q) = %q: not valid JSON", text, out)
		}
		if again, err := Stringify(out); err != nil || again != out {
			t.Fatalf("Stringify(%q) = %q, then %q (%v)", text, out, again, err)
		}
		var in, back any
		if json.Unmarshal([]byte(text), &in) != nil {
			return // a number out of a double's range: JavaScript reads it as ±Infinity or 0
		}
		if err := json.Unmarshal([]byte(out), &back); err != nil || !reflect.DeepEqual(in, back) {
			t.Fatalf("Stringify(%q) = %q: reads back as %#v (%v), not %#v", text, out, back, err, in)
		}
	})
}

// FuzzQuoteJS: QuoteJS writes a JSON string that reads back as s (each
// byte that is not UTF-8 as U+FFFD) and that Stringify leaves as it is.
func FuzzQuoteJS(f *testing.F) {
	for _, s := range []string{"", "<&>\u2028\"\\\x01é", "\xff\xfe", "😀\x7f\t"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q := QuoteJS(s)
		var back string
		if err := json.Unmarshal([]byte(q), &back); err != nil || back != string([]rune(s)) {
			t.Fatalf("QuoteJS(%q) = %s: reads back as %q (%v)", s, q, back, err)
		}
		if again, err := Stringify(q); err != nil || again != q {
			t.Fatalf("QuoteJS(%q) = %s; Stringify of it %s (%v)", s, q, again, err)
		}
	})
}

// FuzzJSNumber: JSNumber writes a finite double as a JSON number that
// reads back as the same double, and anything else as null.
func FuzzJSNumber(f *testing.F) {
	for _, x := range []float64{0, 1, -1.5e-10, 1e21, 1e20, 123456789012345680000, 5e-324, 0.000001, 1e-7, math.MaxFloat64, math.Inf(1), math.NaN()} {
		f.Add(x)
	}
	f.Fuzz(func(t *testing.T, x float64) {
		s := JSNumber(x)
		if math.IsNaN(x) || math.IsInf(x, 0) {
			if s != "null" {
				t.Fatalf("JSNumber(%v) = %s, want null", x, s)
			}
			return
		}
		if !json.Valid([]byte(s)) {
			t.Fatalf("JSNumber(%v) = %s: not a JSON number", x, s)
		}
		if back, err := strconv.ParseFloat(s, 64); err != nil || back != x {
			t.Fatalf("JSNumber(%v) = %s: reads back as %v (%v)", x, s, back, err)
		}
	})
}
