package recovery

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// Small order-preserving edits of JSON object texts. Cumulus stringifies
// some of these objects into error fields, so key order is part of the
// output; editing the text keeps it, where a map would not.

type kv struct{ key, raw string }

func fieldsOf(raw string) []kv {
	var out []kv
	gjson.Parse(raw).ForEach(func(k, v gjson.Result) bool {
		out = append(out, kv{k.String(), v.Raw})
		return true
	})
	return out
}

func buildObject(fields []kv) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, f := range fields {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(f.key)
		b.Write(k)
		b.WriteByte(':')
		b.WriteString(f.raw)
	}
	b.WriteByte('}')
	return b.String()
}

// objMerge is JavaScript's {...a, ...b}: keys keep the place of their first
// appearance and take the value of their last. Non-objects add nothing.
func objMerge(raws ...string) string {
	var fields []kv
	index := map[string]int{}
	for _, raw := range raws {
		if !gjson.Parse(raw).IsObject() {
			continue
		}
		for _, f := range fieldsOf(raw) {
			if i, ok := index[f.key]; ok {
				fields[i].raw = f.raw
				continue
			}
			index[f.key] = len(fields)
			fields = append(fields, f)
		}
	}
	return buildObject(fields)
}

// objSet sets key to the JSON text val ("" deletes it).
func objSet(raw, key, val string) string {
	fields := fieldsOf(raw)
	for i, f := range fields {
		if f.key == key {
			if val == "" {
				return buildObject(append(fields[:i], fields[i+1:]...))
			}
			fields[i].raw = val
			return buildObject(fields)
		}
	}
	if val == "" {
		return buildObject(fields)
	}
	return buildObject(append(fields, kv{key, val}))
}

// objDelete removes keys.
func objDelete(raw string, keys ...string) string {
	fields := fieldsOf(raw)
	out := fields[:0]
	for _, f := range fields {
		keep := true
		for _, k := range keys {
			if f.key == k {
				keep = false
			}
		}
		if keep {
			out = append(out, f)
		}
	}
	return buildObject(out)
}

// compact is JSON.stringify of an already-parsed value: the text without
// insignificant white space.
func compact(raw string) string {
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(raw)); err != nil {
		return raw
	}
	return b.String()
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// WithError is the record v21's sfEventSqsToDbRecords sends to its dead
// letter queue when a write fails: {...record, error: String(err)}.
func WithError(record, errText string) string {
	return objSet(record, "error", jsonString(errText))
}

// jsStringifyString is JSON.stringify of a string: the short escapes, other
// control characters as \u00xx, and nothing else escaped (no HTML escapes,
// U+2028 and U+2029 as they are), unlike encoding/json.
func jsStringifyString(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if r < 0x20 {
				b.WriteString(`\u00`)
				b.WriteByte("0123456789abcdef"[r>>4])
				b.WriteByte("0123456789abcdef"[r&0xf])
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// jsStringify is JSON.stringify(JSON.parse(raw)): JavaScript's key order
// (array indexes first, a repeated key in its first place with its last
// value), numbers as JavaScript prints them, strings escaped as
// JSON.stringify escapes them. raw that is not JSON is returned as it is.
func jsStringify(raw string) string {
	if !gjson.Valid(raw) {
		return raw
	}
	var b strings.Builder
	writeJS(&b, gjson.Parse(raw))
	return b.String()
}

func writeJS(b *strings.Builder, v gjson.Result) {
	switch {
	case v.IsObject():
		fields := fieldsOf(v.Raw)
		last := map[string]string{}
		for _, f := range fields {
			last[f.key] = f.raw
		}
		b.WriteByte('{')
		for i, k := range forInOrder(fields) {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(jsStringifyString(k))
			b.WriteByte(':')
			writeJS(b, gjson.Parse(last[k]))
		}
		b.WriteByte('}')
	case v.IsArray():
		b.WriteByte('[')
		for i, e := range v.Array() {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJS(b, e)
		}
		b.WriteByte(']')
	case v.Type == gjson.String:
		b.WriteString(jsStringifyString(v.Str))
	case v.Type == gjson.Number:
		b.WriteString(jsNumber(v.Num))
	case v.Type == gjson.True:
		b.WriteString("true")
	case v.Type == gjson.False:
		b.WriteString("false")
	default:
		b.WriteString("null")
	}
}

// jsNumber is JSON.stringify of a number (Number.prototype.toString, and
// null for the infinities).
func jsNumber(x float64) string {
	if math.IsInf(x, 0) || math.IsNaN(x) {
		return "null"
	}
	if x == 0 {
		return "0"
	}
	sign := ""
	if x < 0 {
		sign, x = "-", -x
	}
	// Shortest round-trip digits d1.d2...dk and exponent e: x = 0.d1...dk * 10^n, n = e+1.
	mant, exp, _ := strings.Cut(strconv.FormatFloat(x, 'e', -1, 64), "e")
	digits := strings.Replace(mant, ".", "", 1)
	e, _ := strconv.Atoi(exp)
	k, n := len(digits), e+1
	switch {
	case k <= n && n <= 21:
		return sign + digits + strings.Repeat("0", n-k)
	case 0 < n && n <= 21:
		return sign + digits[:n] + "." + digits[n:]
	case -6 < n && n <= 0:
		return sign + "0." + strings.Repeat("0", -n) + digits
	}
	m := digits[:1]
	if k > 1 {
		m += "." + digits[1:]
	}
	es := "+"
	if n-1 < 0 {
		es = "-"
	}
	return sign + m + "e" + es + strconv.Itoa(abs(n-1))
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
