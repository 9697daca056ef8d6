package dla

import (
	"encoding/json"
	"os"
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
