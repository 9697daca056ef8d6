package recovery

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/dla/jsontext"
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
	n := 2
	for _, f := range fields {
		n += len(f.key) + len(f.raw) + 4
	}
	var b strings.Builder
	b.Grow(n) // one allocation, where growing copied a whole message two or three times
	b.WriteByte('{')
	for i, f := range fields {
		if i > 0 {
			b.WriteByte(',')
		}
		writeJSONString(&b, f.key)
		b.WriteByte(':')
		b.WriteString(f.raw)
	}
	b.WriteByte('}')
	return b.String()
}

// writeJSONString writes s as json.Marshal quotes it: as it is between
// quotes when no byte of it needs escaping (printable ASCII but the quote,
// the backslash and the <, > and & that json.Marshal escapes), which is
// every key of a Cumulus message; by json.Marshal otherwise.
func writeJSONString(b *strings.Builder, s string) {
	if plainJSON(s) {
		b.WriteByte('"')
		b.WriteString(s)
		b.WriteByte('"')
		return
	}
	q, _ := json.Marshal(s)
	b.Write(q)
}

func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c > 0x7e, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
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
	if plainJSON(s) {
		return `"` + s + `"`
	}
	b, _ := json.Marshal(s)
	return string(b)
}

// WithError is the record v21's sfEventSqsToDbRecords sends to its dead
// letter queue when a write fails: {...record, error: String(err)}.
func WithError(record, errText string) string {
	return objSet(record, "error", jsonString(errText))
}

// jsStringify is JSON.stringify(JSON.parse(raw)) (jsontext.Stringify);
// raw that is not JSON is returned as it is.
func jsStringify(raw string) string {
	out, err := jsontext.Stringify(raw)
	if err != nil {
		return raw
	}
	return out
}
