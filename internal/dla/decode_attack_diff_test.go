package dla

import (
	"bytes"
	"fmt"
	"reflect"
	"runtime/debug"
	"strings"
	"sync"
	"testing"

	"github.com/deadletter/deadletter/internal/dla/jsontext"
)

// Adversarial differential tests of the single-pass Decode against
// decodeReference: inputs built to hit the scanner's shortcuts (the body,
// detail and message captured during the scan, the key unescaping, the
// pooled buffers), the nesting bound in every JSON text, and results kept
// across many (and concurrent) decodes.

// attackMessage is a Cumulus message that exercises every field
// messageFields reads.
const attackMessage = `{"cumulus_meta":{"state_machine":"arn:aws:states:us-east-1:1:stateMachine:sm","execution_name":"e"},` +
	`"meta":{"status":"completed","collection":{"name":"C","version":"1"},"provider":{"id":"p","protocol":"s3","host":"h","port":1}},` +
	`"payload":{"granules":[{"granuleId":"G1"},{"granuleId":null},{"x":1},"s"]}}`

// attackDetail is a detail with status before its message (the message is
// unescaped during the layer's scan) or after it.
func attackDetail(status, msg string, statusFirst bool) string {
	arns := `"executionArn":"arn:aws:states:us-east-1:1:execution:sm:e","stateMachineArn":"arn:aws:states:us-east-1:1:stateMachine:sm"`
	st := `"status":` + jsq(status)
	io := `"input":` + jsq(msg) + `,"output":` + jsq(msg)
	if statusFirst {
		return `{` + arns + `,` + st + `,` + io + `}`
	}
	return `{` + arns + `,` + io + `,` + st + `}`
}

func attackEvent(detail string) string {
	return `{"time":"2024-01-02T03:04:05Z","detail":` + detail + `}`
}

// attackWrap puts text in n SQS layers, alternating Body and body.
func attackWrap(text string, n int) string {
	for i := range n {
		key := "body"
		if i%2 == 1 {
			key = "Body"
		}
		text = `{"messageId":"m` + fmt.Sprint(i) + `","` + key + `":` + jsq(text) + `,"z":1}`
	}
	return text
}

// attackInEveryText places the fragment frag (JSON text of a value) in every
// JSON text the decoder reads: the top layer, a string layer, two string
// layers, an object layer, detail, a string detail, the Cumulus message
// (in and after the scan), a bare message.
func attackInEveryText(frag string) []string {
	obj := `{"a":` + frag + `}`
	msg := `{"cumulus_meta":{},"meta":{"collection":{"name":` + frag + `,"version":"1"},"provider":{"id":"p","protocol":"s3","host":"h","port":` + frag + `}},"payload":{"granules":[{"granuleId":` + frag + `}]},"x":` + frag + `}`
	detailIn := `{"status":"SUCCEEDED","x":` + frag + `,"output":` + jsq(msg) + `}`
	return []string{
		obj,
		attackWrap(obj, 1),
		attackWrap(obj, 2),
		`{"body":` + obj + `}`,
		`{"body":{"body":` + jsq(obj) + `}}`,
		`{"detail":` + detailIn + `}`,
		`{"detail":` + jsq(detailIn) + `}`,
		attackWrap(`{"detail":`+detailIn+`}`, 1),
		`{"detail":{"status":"SUCCEEDED","output":` + jsq(msg) + `}}`,
		`{"detail":{"output":` + jsq(msg) + `,"status":"SUCCEEDED"}}`,
		`{"detail":{"status":"FAILED","input":` + jsq(msg) + `}}`,
		msg,
		attackWrap(msg, 1),
	}
}

// attackInputs are the attack inputs (each compared with the reference).
func attackInputs() []string {
	var in []string
	add := func(s ...string) { in = append(in, s...) }

	// Every byte value: raw in keys and string values, after a backslash,
	// as a value, between tokens, after the text, in every text.
	for c := range 256 {
		b := string([]byte{byte(c)})
		for _, frag := range []string{`"x` + b + `y"`, `"\` + b + `"`, b, `1` + b, `[` + b + `]`, `{"k` + b + `":1}`, `"` + b + `"`} {
			add(attackInEveryText(frag)...)
		}
		add(`{`+b+`"a":1}`, `{"a"`+b+`:1}`, `{"a":1`+b+`}`, `{"a":1}`+b, b+`{"a":1}`,
			attackWrap(`{`+b+`"a":1}`, 1), attackWrap(`{"a":1}`+b, 1), attackWrap(b+`{"a":1}`, 2),
			`{"b`+b+`dy":"{}"}`, `{"Bod`+b+`":"{}"}`, `{"detai`+b+`":{"status":"RUNNING"}}`)
	}
	// Whitespace of every kind, JSON and not, at every position.
	for _, ws := range []string{" ", "\t", "\n", "\r", "\v", "\f", "\u00a0", "\u2028", "\ufeff", "\x85", "\x00", "  \t\r\n "} {
		for _, s := range []string{attackEvent(attackDetail("SUCCEEDED", attackMessage, true)), attackMessage} {
			var spaced strings.Builder
			for i := range len(s) {
				spaced.WriteByte(s[i])
				if strings.IndexByte(`{}[],:`, s[i]) >= 0 {
					spaced.WriteString(ws)
				}
			}
			add(spaced.String(), ws+spaced.String()+ws, attackWrap(spaced.String(), 1), attackWrap(ws+s+ws, 2),
				`{"detail":{"status":"SUCCEEDED","output":`+jsq(ws+s+ws)+`}}`, `{"detail":`+jsq(ws+`{"status":"RUNNING","input":"{}"}`+ws)+`}`)
		}
	}
	// Escapes: every \u of interest, alone and in pairs, in every text,
	// and escapes that make a quote or backslash in the next layer.
	codes := []string{"0000", "0001", "001f", "0020", "0022", "002f", "005c", "0062", "0042", "007f", "0080", "00e9", "07ff", "0800", "d7ff", "d800", "d83d", "dbff", "dc00", "de00", "dfff", "e000", "fdd0", "fffd", "fffe", "ffff", "FEFF", "Dc00", "DBFF"}
	for _, u := range codes {
		add(attackInEveryText(`"\u` + u + `"`)...)
		add(attackInEveryText(`"a\u` + u + `"`)...)
		add(attackInEveryText(`{"\u` + u + `":1}`)...)
		for _, v := range codes {
			add(`{"a":"\u`+u+`\u`+v+`"}`, `{"k\u`+u+`\u`+v+`":1,"body":"{}"}`,
				`{"body":"{\"a\":\"\\u`+u+`\u`+v+`\"}"}`,  // a pair split across layers
				`{"body":"{\"a\":\"\u`+u+`\\u`+v+`\"}"}`,  // the other way round
				`{"body":"{\"a\":\"\\u`+u+`\\u`+v+`\"}"}`, // both in the inner layer
				`{"body":"{\"a\":\"\u`+u+`\u`+v+`\"}"}`,   // both unescaped by the outer scan
				`{"detail":{"status":"RUNNING","input":"{\"cumulus_meta\":{},\"meta\":{\"collection\":{\"name\":\"\u`+u+`\u`+v+`\",\"version\":\"1\"}}}"}}`,
				`{"Body":"\u`+u+`\u`+v+`"}`,
				`{"detail":{"status":"RUNNING","input":"{\"cumulus_meta\":{},\"meta\":{\"collection\":{\"name\":\"\u`+u+`\\u`+v+`\",\"version\":\"1\"}}}"}}`,
				`{"detail":{"input":"{\"cumulus_meta\":{},\"meta\":{\"collection\":{\"name\":\"\\u`+u+`\u`+v+`\",\"version\":\"1\"}}}","status":"RUNNING"}}`)
		}
	}
	for _, s := range []string{
		// \u escapes forming a quote or a backslash in the next layer.
		`{"body":"{\"a\":\"\u0022}"}`, `{"body":"{\"a\":\"\u005c\u0022\"}"}`, `{"body":"{\"a\":\"\u005c\"}"}`,
		`{"body":"{\u0022a\u0022:\u0022b\u0022}"}`, `{"body":"{\u0022body\u0022:\u0022{\u005c\u0022x\u005c\u0022:1}\u0022}"}`,
		`{"body":"{\"b\\u006fdy\":\"{\\\"\\u0062ody\\\":\\\"{}\\\"}\"}"}`, `{"body":"{\"a\":\"\u005c\u005c\"}"}`,
		`{"body":"{\"a\":\"\u005cu0041\"}"}`, `{"body":"{\"a\":\"\u005cud800\u005cudc00\"}"}`, `{"body":"{\"a\":\"\u005cud800\"}"}`,
		`{"body":"{\"a\":\"\u005cu00\"}"}`, `{"body":"\u007b\u007d"}`, `{"body":"\u005b\u005d"}`,
		`{"detail":{"status":"\u0053UCCEEDED","output":"{\u0022meta\u0022:{}}","input":"x"}}`,
		`{"detail":{"st\u0061tus":"SUCCEEDED","\u006futput":"{\u0022meta\u0022:{}}","input":"x"}}`,
		`{"detail":{"status":"SUCCEEDED\u0000","output":"{}","input":"{}"}}`,
		`{"d\u0065tail":{"status":"RUNNING","input":"{}"},"detail":{"status":"FAILED"}}`,
		`{"\u0062ody":"{}","\u0042ody":"{\"a\":1}"}`, `{"body":"{}","B\u006fdy":null}`,
	} {
		add(s, attackWrap(s, 1))
	}
	// Duplicate keys: Body and body both, in both orders and kinds; two
	// details; two inputs/outputs; status before, between and after.
	vals := []string{`"{\"a\":1}"`, `"{}"`, `null`, `{"b":2}`, `{"body":"{\"c\":3}"}`, `1`, `"x"`, `[]`, `"[]"`, `"null"`, `"\"\""`, `""`, `true`, `"{\"body\":null}"`}
	for _, a := range vals {
		add(`{"body":`+a+`}`, `{"Body":`+a+`}`, attackWrap(`{"body":`+a+`}`, 1), `{"body":{"Body":`+a+`}}`)
		for _, b := range vals {
			for _, k := range [][2]string{{"Body", "body"}, {"body", "Body"}, {"body", "body"}, {"Body", "Body"}} {
				add(`{"`+k[0]+`":`+a+`,"m":1,"`+k[1]+`":`+b+`}`, attackWrap(`{"`+k[0]+`":`+a+`,"`+k[1]+`":`+b+`}`, 1))
			}
		}
	}
	dvals := []string{`{}`, `{"status":"RUNNING","input":"{}"}`, `"{\"status\":\"SUCCEEDED\",\"output\":\"{}\"}"`, `null`, `[]`, `"x"`, `1`, `"{}"`}
	for _, a := range dvals {
		for _, b := range dvals {
			add(`{"detail":`+a+`,"detail":`+b+`}`, attackWrap(`{"detail":`+a+`,"time":1,"detail":`+b+`}`, 1))
		}
	}
	msgs := []string{jsq(attackMessage), `"{}"`, `null`, `"null"`, `"[]"`, `"\"\""`, `{"meta":{}}`, `"x"`, `1`, `"{\"replace\":{\"Bucket\":\"b\",\"Key\":\"k\"}}"`}
	for _, st := range []string{`"SUCCEEDED"`, `"RUNNING"`, `"FAILED"`, `""`, `null`, `0`, `"SUCCEEDED "`, `{"x":"SUCCEEDED"}`} {
		for _, a := range msgs {
			for _, b := range msgs[:5] {
				for _, order := range []string{
					`"status":S,"input":A,"output":B`, `"input":A,"status":S,"output":B`, `"input":A,"output":B,"status":S`,
					`"status":S,"output":A,"output":B,"input":A`, `"status":S,"input":A,"input":B,"output":A`,
					`"status":S,"status":"SUCCEEDED","input":A,"output":B`, `"status":"RUNNING","status":S,"input":A,"output":B`,
				} {
					d := `{` + strings.NewReplacer("S", st, "A", a, "B", b).Replace(order) + `}`
					add(`{"detail":`+d+`}`, `{"detail":`+jsq(d)+`}`)
				}
			}
		}
	}
	// Numbers.
	for _, n := range []string{"-0", "0", "-0.0", "1e999", "-1e999", "1E+2", "1e-400", "00", "01", "-01", "1.", ".5", "-", "+1", "1e", "1e+", "0x10",
		"123456789012345678901234567890123456789", "1.7976931348623157e308", "4.9e-324", "-", "- 1", "1 2", "NaN", "Infinity", "1_000"} {
		add(attackInEveryText(n)...)
		add(`{"executionArn":`+n+`,"collectionId":`+n+`,"granules":[`+n+`],"time":`+n+`,"body":"{}"}`,
			`{"detail":{"status":"FAILED","time":`+n+`}}`, `{"time":`+n+`,"detail":{"status":"FAILED"}}`)
	}
	// Empty objects and arrays (where objects are expected) at every layer.
	for _, e := range []string{`{}`, `[]`, `[{}]`, `{"":""}`, `{"":{}}`, `""`, `null`} {
		add(e, attackWrap(e, 1), attackWrap(e, 3), `{"body":`+e+`}`, `{"body":{"body":`+e+`}}`,
			`{"detail":`+e+`}`, `{"detail":`+jsq(e)+`}`,
			`{"detail":{"status":"SUCCEEDED","output":`+jsq(e)+`}}`, `{"detail":{"status":"SUCCEEDED","output":`+e+`}}`,
			`{"cumulus_meta":`+e+`,"meta":`+e+`,"payload":`+e+`}`,
			`{"cumulus_meta":{},"meta":{"collection":`+e+`,"provider":`+e+`,"status":`+e+`},"payload":{"granules":`+e+`},"replace":`+e+`}`,
			`{"cumulus_meta":{},"payload":{"granules":[`+e+`,{"granuleId":`+e+`}]}}`,
			`{"executionArn":`+e+`,"collectionId":`+e+`,"granules":`+e+`,"status":`+e+`,"time":`+e+`,"body":`+jsq(attackEvent(attackDetail("SUCCEEDED", attackMessage, true)))+`}`)
	}
	// A byte-order mark at the inner layers and in the detail and message.
	bom := "\ufeff"
	add(`{"body":"`+bom+`{}"}`, `{"body":"\ufeff{}"}`, bom+attackWrap(bom+`{}`, 1), bom+bom+`{}`,
		`{"detail":"\ufeff{\"status\":\"RUNNING\"}"}`, `{"detail":{"status":"RUNNING","input":"\ufeff{}"}}`,
		`{"detail":{"status":"RUNNING","input":"`+bom+`{}"}}`, `{"detail":{"input":"`+bom+`{}","status":"RUNNING"}}`)
	// Concatenated texts in every layer.
	for _, c := range []string{`{}{}`, `{} {}`, `{}[]`, `{}"x"`, `{}1`, `{}null`, "{}\n{}", `{"a":1}{"body":"{}"}`} {
		add(c, attackWrap(c, 1), attackWrap(c, 2), `{"detail":`+jsq(c)+`}`, `{"detail":{"status":"RUNNING","input":`+jsq(c)+`}}`,
			`{"detail":{"input":`+jsq(c)+`,"status":"RUNNING"}}`)
	}
	// Many metadata keys, some escaped, in every layer; outer layers win.
	var meta strings.Builder
	for i := range 200 {
		fmt.Fprintf(&meta, `"k%d":%d,"\u006b%d":"v",`, i%50, i, i%70)
	}
	add(`{` + meta.String() + `"body":` + jsq(`{`+meta.String()+`"Body":`+jsq(`{`+meta.String()+`"x":1}`)+`}`) + `}`)
	// Up to 10 string layers (each doubles the escapes), then object
	// layers beyond maxLayers.
	for n := range 11 {
		add(attackWrap(`{"x":"\\\"\u00e9"}`, n))
	}
	for _, n := range []int{62, 63, 64, 65} {
		o := attackWrap(`{"a":1}`, 2)
		for range n {
			o = `{"m":1,"Body":` + o + `}`
		}
		add(o)
	}
	return in
}

func TestDecodeMatchesReferenceOnAttacks(t *testing.T) {
	in := attackInputs()
	var errs, ok int
	for i, s := range in {
		if diff := sameDecode([]byte(s)); diff != "" {
			t.Fatalf("input %d %.300q: %s", i, s, diff)
		}
		if _, err := Decode([]byte(s)); err != nil {
			errs++
		} else {
			ok++
		}
	}
	t.Logf("%d inputs: %d decode errors, %d decoded", len(in), errs, ok)
	if errs < 1000 || ok < 1000 {
		t.Fatalf("%d errors and %d decoded: the table should exercise both", errs, ok)
	}
}

// attackRich is a DLA record of three layers (two string ones), a detail with
// its status first, and a message of every field.
func attackRich() string {
	ev := attackEvent(attackDetail("SUCCEEDED", attackMessage, true))
	sqs := `{"messageId":"m\u0031","Body":` + jsq(ev) + `,"attributes":{"x":[1,2.5e3,null,true]}}`
	return `{"executionArn":null,"collectionId":"c","granules":["g"],"error":"boom","archiveError":"x","body":` + jsq(sqs) + `}`
}

// TestDecodeMatchesReferenceCutAndMutated cuts a rich object, and
// each of its inner texts inside valid outer layers, at every byte, and
// replaces or inserts structural bytes at every position.
func TestDecodeMatchesReferenceCutAndMutated(t *testing.T) {
	rich := attackRich()
	if d, err := decodeReference([]byte(rich)); err != nil || d.Depth != 2 || d.Message == "" || len(d.Granules) != 1 {
		t.Fatalf("rich seed does not decode as meant: %v %+v", err, d)
	}
	ev := attackEvent(attackDetail("SUCCEEDED", attackMessage, true))
	check := func(what string, s string) {
		t.Helper()
		if diff := sameDecode([]byte(s)); diff != "" {
			t.Fatalf("%s %.300q: %s", what, s, diff)
		}
	}
	for n := 0; n <= len(rich); n++ {
		check("cut", rich[:n])
	}
	for n := 0; n <= len(ev); n++ {
		check("inner cut", `{"body":`+jsq(`{"Body":`+jsq(ev[:n])+`}`)+`}`)
		check("event cut", ev[:n])
	}
	for n := 0; n <= len(attackMessage); n++ {
		check("message cut", `{"detail":{"status":"SUCCEEDED","output":`+jsq(attackMessage[:n])+`}}`)
		check("message cut, status last", `{"detail":{"output":`+jsq(attackMessage[:n])+`,"status":"SUCCEEDED"}}`)
	}
	subs := []byte{'"', '\\', '{', '}', '[', ']', ',', ':', ' ', 'u', '0', 'n', 0, 0xff, '\v'}
	texts := []string{rich, ev}
	if raceDetector {
		subs, texts = subs[:6], texts[:1]
	}
	for _, s := range texts {
		b := []byte(s)
		for i := range b {
			for _, c := range subs {
				m := bytes.Clone(b)
				m[i] = c
				check("replaced", string(m))
				check("inserted", s[:i]+string(c)+s[i:])
			}
			check("deleted", s[:i]+s[i+1:])
		}
	}
}

// TestDeepNestingEverywhereIsRefusedWithoutRecursion: ten million levels
// in every JSON text the decoder reads are refused as the reference refuses
// them, without deep recursion (the stack is capped far below what recursing once per
// level would need, so recursion would crash the test binary).
func TestDeepNestingEverywhereIsRefusedWithoutRecursion(t *testing.T) {
	old := debug.SetMaxStack(64 << 20)
	defer debug.SetMaxStack(old)
	n := 10_000_000
	if raceDetector {
		n = 1_000_000
	}
	arr := strings.Repeat("[", n)
	objs := strings.Repeat(`{"":`, n/2)
	cases := map[string]string{
		"top array":             arr,
		"top object":            objs,
		"member":                `{"a":` + arr + `}`,
		"member closed":         `{"a":` + arr + strings.Repeat("]", n) + `}`,
		"string layer":          `{"body":` + jsq(objs) + `}`,
		"second string layer":   `{"body":` + jsq(`{"Body":`+jsq(`{"a":`+arr+`}`)+`}`) + `}`,
		"object layer":          `{"body":{"body":` + arr + `}}`,
		"detail object":         `{"detail":{"status":"RUNNING","x":` + arr + `}}`,
		"string detail":         `{"detail":` + jsq(`{"status":"RUNNING","x":`+arr+`}`) + `}`,
		"message in scan":       `{"detail":{"status":"RUNNING","input":` + jsq(`{"cumulus_meta":{},"meta":`+objs+`}`) + `}}`,
		"message after scan":    `{"detail":{"output":` + jsq(`{"payload":{"granules":`+arr+`}}`) + `,"status":"SUCCEEDED"}}`,
		"message of string det": `{"detail":` + jsq(`{"status":"SUCCEEDED","output":`+jsq(arr)+`}`) + `}`,
		"metadata":              `{"messageId":` + arr + `,"body":"{}"}`,
		"inner metadata":        `{"body":` + jsq(`{"error":`+objs+`,"body":"{}"}`) + `}`,
		"invalid then deep":     `{"a":1,,"b":` + arr + `}`,
		"deep in a body string": `{"body":` + jsq(`{"x":1}`+arr) + `}`,
		"bare message":          `{"cumulus_meta":{},"payload":` + arr + `}`,
		"brackets in a string":  `{"a":"` + arr + `","body":"{}"}`,
	}
	for name, s := range cases {
		got, gerr := Decode([]byte(s))
		want, werr := decodeReference([]byte(s))
		if fmt.Sprint(gerr) != fmt.Sprint(werr) || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: error %v, reference %v", name, gerr, werr)
		}
		if name != "brackets in a string" && (gerr == nil || !strings.Contains(gerr.Error(), jsontext.DepthReason) && !strings.Contains(gerr.Error(), "not valid JSON")) {
			t.Errorf("%s: error %v, want the depth bound", name, gerr)
		}
	}
}

// TestDecodeHugeBody: a 64 MiB body string, escaped and not, in
// one and two layers, and as the message.
func TestDecodeHugeBody(t *testing.T) {
	size := 64 << 20
	if raceDetector {
		size = 8 << 20
	}
	big := strings.Repeat(`abcdefg\"`, size/9)
	inner := `{"x":"` + big + `","detail":{"status":"RUNNING","input":"{\"cumulus_meta\":{},\"meta\":{\"collection\":{\"name\":\"n\",\"version\":\"v\"}}}"}}`
	for name, s := range map[string]string{
		"one layer":  `{"messageId":"m","body":` + jsq(inner) + `}`,
		"message":    `{"detail":{"status":"RUNNING","input":` + jsq(`{"cumulus_meta":{},"x":"`+big[:size/2]+`"}`) + `}}`,
		"cut at end": `{"body":` + jsq(inner)[:len(inner)] + `}`,
	} {
		if diff := sameDecode([]byte(s)); diff != "" {
			t.Fatalf("%s: %.500s", name, diff)
		}
	}
	// After a huge decode, small decodes still match (pooled buffers).
	for _, s := range attackInEveryText(`"y"`) {
		if diff := sameDecode([]byte(s)); diff != "" {
			t.Fatal(diff)
		}
	}
}

// cloneDecoded deep-copies a *Decoded, so that a later change to the memory it
// shares with anything is seen.
func cloneDecoded(d *Decoded) *Decoded {
	c := *d
	c.Granules = cloneStrings(d.Granules)
	c.Problems = cloneStrings(d.Problems)
	c.Derived = cloneStrings(d.Derived)
	cf := func(fs []Field) []Field {
		if fs == nil {
			return nil
		}
		out := make([]Field, len(fs))
		for i, f := range fs {
			out[i] = Field{strings.Clone(f.Name), strings.Clone(f.Raw)}
		}
		return out
	}
	c.Metadata, c.Hoisted = cf(d.Metadata), cf(d.Hoisted)
	if d.Layers != nil {
		c.Layers = make([]Layer, len(d.Layers))
		for i, l := range d.Layers {
			c.Layers[i] = Layer{BodyKey: strings.Clone(l.BodyKey), Metadata: cf(l.Metadata)}
		}
	}
	for _, s := range []*string{&c.Event, &c.Detail, &c.Message, &c.MessageSource, &c.MessageID, &c.ExecutionArn, &c.StateMachineArn,
		&c.Status, &c.Time, &c.CollectionID, &c.ProviderID, &c.Error} {
		*s = strings.Clone(*s)
	}
	return &c
}

func cloneStrings(s []string) []string {
	if s == nil {
		return nil
	}
	out := make([]string, len(s))
	for i, x := range s {
		out[i] = strings.Clone(x)
	}
	return out
}

// TestDecodeResultsNotAliased keeps the results of many decodes,
// from several goroutines at once, and compares each with a deep copy taken
// when it was returned and with a fresh reference decode, after all the
// others have run: a result that shares a pooled buffer would change.
// The inputs' own bytes are overwritten after decoding too (a result must
// not point into the caller's buffer either). Run with -race.
func TestDecodeResultsNotAliased(t *testing.T) {
	var in []string
	in = append(in, attackRich(), attackEvent(attackDetail("SUCCEEDED", attackMessage, true)), attackEvent(attackDetail("FAILED", attackMessage, false)), attackMessage)
	for _, frag := range []string{`"v"`, `{"k":[1,"\u00e9"]}`, `"\ud800x"`} {
		in = append(in, attackInEveryText(frag)...)
	}
	in = append(in, hostileInputs()...)
	type kept struct {
		input string
		d     *Decoded
		snap  *Decoded
		err   string
	}
	const workers = 4
	results := make([][]kept, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := range 3 {
				for i := range in {
					s := in[(i*7+w*13+round)%len(in)]
					raw := []byte(s)
					d, err := Decode(raw)
					for j := range raw {
						raw[j] = '#' // the caller reuses its buffer
					}
					results[w] = append(results[w], kept{s, d, cloneDecoded(d), fmt.Sprint(err)})
				}
			}
		}()
	}
	wg.Wait()
	var n, layered int
	for _, rs := range results {
		for _, r := range rs {
			n++
			if !reflect.DeepEqual(r.d, r.snap) {
				t.Fatalf("%.200q: result changed after later decodes:\n%#v\nwas\n%#v", r.input, r.d, r.snap)
			}
			want, werr := decodeReference([]byte(r.input))
			if !reflect.DeepEqual(r.d, want) || r.err != fmt.Sprint(werr) {
				t.Fatalf("%.200q: kept result\n%#v\nreference\n%#v", r.input, r.d, want)
			}
			if r.d.Depth > 0 && r.d.Message != "" {
				layered++
			}
		}
	}
	if n < 3000 || layered < 100 {
		t.Fatalf("%d results, %d with layers and a message: too few to mean anything", n, layered)
	}
}

// FuzzDecodeMatchesReferenceOnAttacks is FuzzDecodeMatchesReference seeded
// with the attack inputs (a sample of them: every one runs in
// TestDecodeMatchesReferenceOnAttacks).
func FuzzDecodeMatchesReferenceOnAttacks(f *testing.F) {
	f.Add([]byte(attackRich()))
	for i, s := range attackInputs() {
		if i%20 == 0 && len(s) < 4096 {
			f.Add([]byte(s))
		}
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if diff := sameDecode(raw); diff != "" {
			t.Fatal(diff)
		}
	})
}

// TestManyMetadataKeysMergeAsTheReference: layers of thousands of keys,
// duplicated within a layer and across layers (escaped and not), merge as the
// reference merges them (first of a layer's duplicates and outer layers
// win) on both sides of the point where Decode starts indexing the names.
func TestManyMetadataKeysMergeAsTheReference(t *testing.T) {
	layer := func(n, mod int, tag string) string {
		var b strings.Builder
		for i := range n {
			if i%3 == 0 {
				fmt.Fprintf(&b, `"\u006b%d":"%s%d",`, i%mod, tag, i)
			} else {
				fmt.Fprintf(&b, `"k%d":"%s%d",`, i%mod, tag, i)
			}
		}
		return b.String()
	}
	for _, n := range []int{1, 30, 31, 32, 33, 34, 64, 3000} {
		for _, mod := range []int{1, 7, 31, 32, 33, n / 2, n} {
			if mod < 1 {
				continue
			}
			in := `{` + layer(n/3+1, mod*2, "c") + `"x":1}`
			mid := `{` + layer(n, mod, "b") + `"messageId":"m2","error":null,"Body":` + jsq(in) + `}`
			top := `{` + layer(n/2+1, mod+1, "a") + `"body":` + jsq(mid) + `,"messageId":"m1"}`
			for _, s := range []string{top, mid, `{"body":{"body":` + mid + `}}`} {
				if diff := sameDecode([]byte(s)); diff != "" {
					t.Fatalf("n %d mod %d: %.600s", n, mod, diff)
				}
			}
			if d, _ := Decode([]byte(top)); n == 3000 && mod == n && len(d.Metadata) < n {
				t.Fatalf("%d metadata keys, want at least %d", len(d.Metadata), n)
			}
		}
	}
}

// TestPoolDropsLargeKeyBuffers: the buffer a layer's keys (and
// detail's status) are unescaped into is dropped like the others when a
// large object grew it, instead of staying in the pool. A status of 4 MiB
// grows it to 4 MiB.
func TestPoolDropsLargeKeyBuffers(t *testing.T) {
	big := strings.Repeat("S", 4<<20)
	raw := []byte(`{"detail":{"st\u0061tus":"` + big + `","input":"{}"},"\u006b` + big + `":1}`)
	if diff := sameDecode(raw); diff != "" {
		t.Fatal(diff)
	}
	st := new(decodeState)
	ls := &st.scans[0]
	ls.wantLayer = true
	if deep, valid := ls.check(raw); deep || !valid || cap(ls.keyBuf) <= maxPooled {
		t.Fatalf("the scan did not grow the key buffer (%d bytes)", cap(ls.keyBuf))
	}
	// The message tape's key buffer, grown by a search for a key among
	// escaped keys of 2 MiB.
	msg := []byte(`{"\u0061` + strings.Repeat("a", 2*maxPooled) + `":1}`)
	if deep, valid := st.msg.Check(msg, tapeDepth); deep || !valid || st.msg.Child(msg, -1, "x") != -1 {
		t.Fatal("the message tape did not read the message")
	}
	if _, keyBytes := st.msg.Capacity(); keyBytes <= maxPooled {
		t.Fatalf("the tape did not grow its key buffer (%d bytes)", keyBytes)
	}
	st.release() // the test runs no other decode: st is read after it is pooled
	if _, keyBytes := st.msg.Capacity(); cap(st.scans[0].keyBuf) > maxPooled || keyBytes > maxPooled {
		t.Fatalf("release kept key buffers of %d and %d bytes", cap(st.scans[0].keyBuf), keyBytes)
	}
}
