package dla

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The differential tests: Decode must return exactly what decodeReference
// (the decoder before the single-pass rewrite) returns, every field of the
// *Decoded and the error text, for every input, because search, show,
// stats, report and recover print it byte for byte.

// sameDecode reports how Decode and decodeReference differ on raw ("" when
// they do not). Neither may panic.
func sameDecode(raw []byte) string {
	got, gerr := Decode(raw)
	want, werr := decodeReference(raw)
	if fmt.Sprint(gerr) != fmt.Sprint(werr) {
		return fmt.Sprintf("error %v, reference %v", gerr, werr)
	}
	if (gerr == nil) != (werr == nil) || (gerr != nil && !IsDecodeError(gerr)) {
		return fmt.Sprintf("error kind %T, reference %T", gerr, werr)
	}
	if !reflect.DeepEqual(got, want) {
		return fmt.Sprintf("decoded\n%#v\nreference\n%#v", got, want)
	}
	return ""
}

func fixtureObjects(t testing.TB) [][]byte {
	t.Helper()
	var out [][]byte
	for _, e := range loadManifest(t) {
		raw, err := os.ReadFile(filepath.Join(seedDir, e.Key))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, raw)
	}
	return out
}

func TestDecodeMatchesReferenceOnFixture(t *testing.T) {
	objs := fixtureObjects(t)
	if len(objs) != 150 {
		t.Fatalf("%d fixture objects, want 150", len(objs))
	}
	var decodeErrors, layered int
	for i, raw := range objs {
		if diff := sameDecode(raw); diff != "" {
			t.Errorf("fixture object %d: %s", i, diff)
		}
		d, err := Decode(raw)
		if err != nil {
			decodeErrors++
		}
		if d.Depth >= 1 {
			layered++
		}
	}
	// The comparison is not vacuous: the fixture holds errors and layers
	// (a DLA record keeps one: the writer re-serialises the innermost body).
	if decodeErrors == 0 || layered == 0 {
		t.Fatalf("fixture gave %d decode errors and %d objects of 2+ layers", decodeErrors, layered)
	}
}

// TestDecodeMatchesReferenceTruncated cuts real objects of 1, 2 and 3
// layers (and one with a string detail) at every byte offset.
func TestDecodeMatchesReferenceTruncated(t *testing.T) {
	objs := fixtureObjects(t)
	picked := map[int][]byte{}
	for _, raw := range objs {
		d, err := decodeReference(raw)
		if err != nil {
			continue
		}
		if _, ok := picked[d.Depth]; !ok || len(raw) < len(picked[d.Depth]) {
			picked[d.Depth] = raw
		}
	}
	if picked[1] == nil {
		t.Fatal("fixture has no one-layer object that decodes")
	}
	// No layer (its event), two and three layers (wrapped as SQS would).
	one := string(picked[1])
	d, _ := decodeReference(picked[1])
	picked[0] = []byte(d.Event)
	two := `{"messageId":"m2","Body":` + jsq(one) + `,"x":1}`
	picked[2] = []byte(two)
	picked[3] = []byte(`{"body":` + jsq(two) + `}`)
	for depth, raw := range picked {
		for n := 0; n <= len(raw); n++ {
			if diff := sameDecode(raw[:n]); diff != "" {
				t.Fatalf("%d-layer object cut at %d of %d bytes: %s", depth, n, len(raw), diff)
			}
		}
	}
}

// jsq quotes s as a JSON string (the way a writer nests a layer).
func jsq(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\n':
			b.WriteString(`\n`)
		default:
			if c < 0x20 {
				fmt.Fprintf(&b, `\u%04x`, c)
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

func nest(n int, open, close, inside string) string {
	return strings.Repeat(open, n) + inside + strings.Repeat(close, n)
}

// hostileInputs are hand-written inputs at the edges of the grammar and of
// the decoder's rules.
func hostileInputs() []string {
	msg := `{"cumulus_meta":{"state_machine":"arn:aws:states:us-east-1:1:stateMachine:sm","execution_name":"e"},` +
		`"meta":{"status":"completed","collection":{"name":"C","version":"1"},"provider":{"id":"p","protocol":"s3","host":"h","port":1}},` +
		`"payload":{"granules":[{"granuleId":"G1"},{"granuleId":null},{"x":1},"s"]}}`
	detail := `{"executionArn":"arn:aws:states:us-east-1:1:execution:sm:e","stateMachineArn":"arn:aws:states:us-east-1:1:stateMachine:sm","status":"SUCCEEDED","input":` + jsq(msg) + `,"output":` + jsq(msg) + `}`
	ev := `{"time":"2024-01-02T03:04:05Z","detail":` + detail + `}`
	dla := `{"messageId":"m1","executionArn":null,"collectionId":"c","granules":["g"],"error":"boom","body":` + jsq(ev) + `}`
	in := []string{
		``, ` `, `{`, `}`, `{}`, ` {} `, "\t{}\r\n", `[]`, `[{}]`, `null`, `true`, `false`, `0`, `-0`, `1e400`, `"x"`, `"{}"`,
		`{"a":1}x`, `{"a":1}}`, `{"a":1} {}`, `{"a":1,}`, `{,}`, `{"a"}`, `{"a":}`, `{"a" : 1 , "b" :2}`, `{"a":01}`, `{"a":1.}`, `{"a":.5}`,
		`{"a":-}`, `{"a":1e}`, `{"a":1e+}`, `{"a":+1}`, `{"a":NaN}`, `{"a":nul}`, `{"a":tru}`, `{"a":falsey}`,
		`{"n":-0,"big":123456789012345678901234567890,"e":1e400,"f":-1.5E-300,"z":0.0}`,
		"\xef\xbb\xbf{}", "\xef\xbb\xbf", "\xef\xbb\xbf\xef\xbb\xbf{}", "\xef\xbb{}", " \xef\xbb\xbf{}",
		"{\"a\":\"\x00\"}", "{\"a\":1}\x00", "{\"a\x00\":1}", "{\"a\":\"\xff\xfe\"}", "{\"\xff\":\"\xc3\x28\"}", "{\"a\":1}\xff", "\xff{}",
		"{\"body\":\"\xff\"}", "{\"body\":\"{\\\"a\\\":\\\"\xed\xa0\x80\\\"}\"}",
		`{"a":"\ud800"}`, `{"a":"\udc00"}`, `{"a":"\ud800\udc00"}`, `{"a":"\ud800\u0041"}`, `{"a":"\udc00\ud800"}`, `{"a":"\ud800\\"}`,
		`{"a":"\ud800\u"}`, `{"a":"\u12"}`, `{"a":"\u12g4"}`, `{"a":"\x"}`, `{"a":"\'"}`, `{"a":"\/\b\f\n\r\t\"\\"}`,
		`{"body":"\ud800"}`, `{"body":"\"\ud800\""}`, `{"body":"{\"a\":\"\\ud800\\u0041\"}"}`, `{"Body":"{\"\\u0062ody\":\"{}\"}"}`,
		`{"B\u006fdy":"{\"x\":1}"}`, `{"b\u006fdy":null}`, `{"\u0062ody":"{}","body":"[]"}`,
		`{"body":null}`, `{"body":1}`, `{"body":true}`, `{"body":[1,2]}`, `{"body":{"body":{"a":1}}}`, `{"body":{"body":"{\"c\":2}"}}`,
		`{"body":""}`, `{"body":" "}`, `{"body":"x"}`, `{"body":"\"x\""}`, `{"body":"123 "}`, `{"body":" [1] "}`, `{"body":" {} "}`, `{"body":"null"}`,
		`{"body":"{}","Body":"{\"a\":1}"}`, `{"Body":"{\"a\":1}","body":"{}"}`, `{"body":"{\"a\":1}","body":"{\"b\":2}"}`,
		`{"Body":"{\"a\":1}","Body":7}`, `{"Body":7,"Body":"{\"a\":1}"}`, `{"Body":"{\"a\":1}","Body":"{\"b\":2}","x":1,"x":2}`,
		`{"messageId":"a","messageId":"b","body":"{\"messageId\":\"c\",\"MessageId\":\"d\",\"error\":null,\"body\":\"{}\"}"}`,
		`{"MessageId":5,"error":{"e":1},"body":"{\"error\":\"inner\"}"}`,
		`{"archiveError":"bad","record":"x"}`, `{"archiveError":1}`,
		`{"detail":"x"}`, `{"detail":"{}"}`, `{"detail":"[]"}`, `{"detail":1}`, `{"detail":null}`, `{"detail":[]}`, `{"detail":{}}`,
		`{"detail":{"status":"RUNNING"}}`, `{"detail":{"status":"FAILED"}}`, `{"detail":{"status":"SUCCEEDED","output":null}}`,
		`{"detail":{"status":"SUCCEEDED","output":"not json"}}`, `{"detail":{"status":"SUCCEEDED","output":"[1]"}}`, `{"detail":{"status":"SUCCEEDED","output":{"meta":{}}}}`,
		`{"detail":{"status":0,"input":"{}"}}`, `{"detail":{"status":"x","input":"{\"replace\":{\"Bucket\":\"b\",\"Key\":\"k\"}}"}}`,
		`{"detail":{"status":"RUNNING","status":"SUCCEEDED","input":"{}","input":"[]"}}`, `{"detail":{"a":1},"detail":{"status":"RUNNING","input":"{}"}}`,
		`{"detail":"{\"status\":\"RUNNING\",\"input\":\"{}\"}","detail":{"status":"FAILED"}}`, `{"d\u0065tail":{"st\u0061tus":"RUNNING","\u0069nput":"{\"meta\":1}"}}`,
		`{"cumulus_meta":{},"meta":{"status":"running"}}`, `{"cumulus_meta":1,"meta":{"status":"completed"},"meta":{"status":"x"}}`,
		`{"cumulus_meta":{"state_machine":"arn:stateMachine:x","execution_name":"n"},"payload":{"granules":[]},"replace":{"Bucket":1}}`,
		`{"time":0,"detail":{}}`, `{"time":"t","time":"u","detail":{"status":"FAILED"}}`,
		`{"executionArn":"a","collectionId":"c","granules":"g","status":null,"time":"","body":"{\"detail\":{\"status\":\"RUNNING\",\"input\":\"{}\"}}"}`,
		msg, detail, ev, dla, jsq(ev), `{"body":` + jsq(dla) + `}`, `{"Body":` + jsq(`{"body":`+jsq(dla)+`}`) + `}`,
		`{"detail":` + jsq(detail) + `}`, `{"body":` + jsq(`{"detail":`+jsq(detail)+`}`) + `}`,
		`{"body":"` + strings.Repeat(`\\`, 7) + `"}`, `{"a":"` + strings.Repeat(`\"`, 100) + `"}`,
	}
	// Escapes of every kind, inside a layer and inside a nested body.
	for c := range 0x100 {
		s := string(rune(c))
		if c >= 0x80 {
			s = string([]byte{byte(c)})
		}
		in = append(in, `{"a":"\`+s+`"}`, `{"k":"`+s+`"}`, `{"body":"{\"a\":\"\\`+s+`\"}"}`, `{"a":`+s+`}`)
	}
	for _, u := range []string{"0000", "001f", "0022", "005c", "007f", "0080", "07ff", "0800", "d7ff", "d800", "dbff", "dc00", "dfff", "e000", "fffd", "ffff", "FFFF", "DbFf"} {
		in = append(in, `{"a":"\u`+u+`","body":"{\"b\":\"\\u`+u+`\\u`+u+`\"}"}`, `{"\u`+u+`":1}`)
		// Unescaped by the scan itself: in a body, and in the message.
		for _, v := range []string{"0041", "d800", "dbff", "dc00", "dfff", "D834"} {
			in = append(in, `{"\u`+u+`\u`+v+`":1,"body":"{}"}`, `{"body":"{\"b\":\"\u`+u+`\u`+v+`\"}"}`, `{"Body":"\u`+u+`\u`+v+`"}`, `{"body":"{\"\u`+u+`\u`+v+`\":1}"}`,
				`{"detail":{"status":"RUNNING","input":"{\"cumulus_meta\":{},\"meta\":{\"collection\":{\"name\":\"\u`+u+`\u`+v+`\",\"version\":\"1\"}}}"}}`)
		}
	}
	// Nesting at and around the bound, in every JSON text the decoder reads.
	for _, n := range []int{1, 510, 511, 512, 513, 514, 1000} {
		deep := nest(n, "[", "]", "")
		deepObj := nest(n, `{"a":`, "}", "1")
		in = append(in,
			`{"a":`+deep+`}`, deep, deepObj, `{"a":`+nest(n, "[", "]", `"`+strings.Repeat("[", 600)+`"`)+`}`,
			`{"body":`+jsq(`{"a":`+deep+`}`)+`}`,
			`{"body":`+jsq(`{"body":`+jsq(`{"a":`+deep+`}`)+`}`)+`}`,
			`{"detail":`+jsq(`{"a":`+deep+`}`)+`}`,
			`{"detail":{"status":"RUNNING","input":`+jsq(`{"a":`+deep+`}`)+`}}`,
			`{"detail":{"status":"SUCCEEDED","output":`+jsq(deepObj)+`}}`,
			`{"body":{"a":`+deep+`}}`,
			`{"a":`+nest(n, "[", "]", "")[:n+n/2]+`}`,
		)
	}
	// Many layers: string layers (each doubles the escapes), and object
	// layers at and beyond maxLayers.
	s := `{"x":"\\\"\u00e9"}`
	for range 9 {
		s = `{"body":` + jsq(s) + `}`
		in = append(in, s)
	}
	for _, n := range []int{63, 64, 65} {
		o := `{"x":1}`
		for range n {
			o = `{"body":` + o + `}`
		}
		in = append(in, o)
	}
	return in
}

func TestDecodeMatchesReferenceHostile(t *testing.T) {
	in := hostileInputs()
	var decodeErrors, ok int
	for i, s := range in {
		if diff := sameDecode([]byte(s)); diff != "" {
			t.Errorf("input %d %.200q: %s", i, s, diff)
		}
		if _, err := Decode([]byte(s)); err != nil {
			decodeErrors++
		} else {
			ok++
		}
	}
	if decodeErrors < 50 || ok < 50 {
		t.Fatalf("%d inputs failed and %d decoded: the table should exercise both", decodeErrors, ok)
	}
}

// FuzzDecodeMatchesReference: for any input, Decode returns what the
// reference decoder returns.
func FuzzDecodeMatchesReference(f *testing.F) {
	for _, raw := range fixtureObjects(f) {
		f.Add(raw)
	}
	for _, s := range hostileInputs() {
		if len(s) < 4096 {
			f.Add([]byte(s))
		}
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if diff := sameDecode(raw); diff != "" {
			t.Fatal(diff)
		}
	})
}
