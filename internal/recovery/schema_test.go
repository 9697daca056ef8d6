package recovery

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/dla/jsontext"
)

// TestSchemaErrorMatchesV21 replays testdata/schema-v21/golden.json, made
// by gen.js from Cumulus v21.0.0's own recordIsValid and granule schema
// (ajv v6): for each API granule record, the granule's error column v21
// writes (byte for byte) and the text of the error the message fails with.
func TestSchemaErrorMatchesV21(t *testing.T) {
	raw, err := os.ReadFile("testdata/schema-v21/golden.json")
	if err != nil {
		t.Fatal(err)
	}
	cases := gjson.ParseBytes(raw).Array()
	if len(cases) < 50 {
		t.Fatalf("golden.json holds %d cases", len(cases))
	}
	invalid := 0
	for _, c := range cases {
		if c.Get("messageError").Type != gjson.Null {
			invalid++
		}
	}
	if invalid < 40 {
		t.Fatalf("golden.json holds only %d invalid records", invalid)
	}
	for _, c := range cases {
		name := c.Get("name").Str
		t.Run(name, func(t *testing.T) {
			// omitBy(apiGranuleRecord, isNull), keeping the key order.
			var rec []kv
			for _, f := range fieldsOf(c.Get("record").Raw) {
				if gjson.Parse(f.raw).Type != gjson.Null {
					rec = append(rec, f)
				}
			}
			wantColumn, wantMsg := c.Get("errorColumn"), c.Get("messageError")
			verr := validateGranule(rec)
			if wantMsg.Type == gjson.Null {
				if verr != nil {
					t.Fatalf("v21 accepts the record; we report %v", verr)
				}
				return
			}
			if verr == nil {
				t.Fatalf("v21 fails the record with %s; we accept it", wantMsg.Str)
			}
			var gotMsg string
			if status := c.Get("record.status").Str; status == "completed" || status == "failed" {
				column := schemaFailureError(c.Get("record.error").Raw, verr)
				if column != wantColumn.Str {
					t.Errorf("error column\n got %s\nwant %s", column, wantColumn.Str)
				}
				if !json.Valid([]byte(column)) {
					t.Errorf("error column is not JSON: %s", column)
				}
				gotMsg = (&SchemaFailedGranuleError{Cause: verr}).Error()
			} else {
				if wantColumn.Type != gjson.Null {
					t.Fatalf("golden: a non-final granule with an error column")
				}
				gotMsg = verr.Error()
			}
			if gotMsg != wantMsg.Str {
				t.Errorf("message error\n got %s\nwant %s", gotMsg, wantMsg.Str)
			}
		})
	}
}

// TestJSStringify pins the string escaping JSON.stringify uses, which the
// error column is built with: no HTML escapes, U+2028/U+2029 as they are.
func TestJSStringify(t *testing.T) {
	for in, want := range map[string]string{
		`a<b>&c`:            `"a<b>&c"`,
		"q\"\\\n\t\x01\x7f": `"q\"\\\n\t\u0001` + "\x7f\"",
		"\u2028\u2029é":     "\"\u2028\u2029é\"",
	} {
		if got := jsontext.QuoteJS(in); got != want {
			t.Errorf("jsontext.QuoteJS(%q) = %s, want %s", in, got, want)
		}
	}
	if !strings.HasPrefix(jsontext.QuoteJS("\b\f\r"), `"\b\f\r"`) {
		t.Errorf("short escapes: %s", jsontext.QuoteJS("\b\f\r"))
	}
}

// TestJSStringifyValue pins JSON.stringify(JSON.parse(raw)) (values printed
// by node 20), used for the exception kept in the error column.
func TestJSStringifyValue(t *testing.T) {
	in := `{"b":1,"2":2,"a":3,"b":4,"1":5,"01":6,"4294967295":7,"4294967294":8,"s":"<\u003c\u2028\/x","n":[1.0,1e400,-0.0,2E-7]}`
	want := `{"1":5,"2":2,"4294967294":8,"b":4,"a":3,"01":6,"4294967295":7,"s":"<<` + "\u2028" + `/x","n":[1,null,0,2e-7]}`
	if got := jsStringify(in); got != want {
		t.Errorf("jsStringify\n got %s\nwant %s", got, want)
	}
	for x, want := range map[float64]string{
		1e21: "1e+21", 1.5e-7: "1.5e-7", 123456789012345680000: "123456789012345680000", 0.000001: "0.000001",
		1e-7: "1e-7", 100: "100", -2.5e-10: "-2.5e-10", 1.7976931348623157e308: "1.7976931348623157e+308",
		5e-324: "5e-324", 0.1: "0.1", 123.456: "123.456", 1e20: "100000000000000000000", -1e21: "-1e+21",
	} {
		if got := jsontext.JSNumber(x); got != want {
			t.Errorf("jsontext.JSNumber(%v) = %s, want %s", x, got, want)
		}
	}
}
