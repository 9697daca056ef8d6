package recovery

import (
	"encoding/json"
	"strings"
	"testing"
)

// Keys and strings are quoted exactly as json.Marshal quotes them, whether
// they take the plain path or need escaping: quotes, backslashes, the <, >
// and & json.Marshal escapes, control characters, U+2028, non-ASCII and
// bytes that are not UTF-8.
func TestJSONStringsAreQuotedAsJSONMarshalQuotesThem(t *testing.T) {
	for _, s := range []string{"", "granuleId", "a b-c_d.e:1/2", `say "hi"`, `back\slash`, "<script>", "a&b", "tab\there",
		"nul\x00", "del\x7f", "line\u2028sep", "é", "日本", "\xff\xfe", "~!@#$%^*()_+={}[]|;',.?"} {
		want, _ := json.Marshal(s)
		if got := jsonString(s); got != string(want) {
			t.Errorf("jsonString(%q) = %s, want %s", s, got, want)
		}
		var b strings.Builder
		writeJSONString(&b, s)
		if b.String() != string(want) {
			t.Errorf("writeJSONString(%q) = %s, want %s", s, b.String(), want)
		}
	}
	if got, want := buildObject([]kv{{"a", "1"}, {"<k>", `"v"`}}), `{"a":1,"\u003ck\u003e":"v"}`; got != want {
		t.Errorf("buildObject = %s, want %s", got, want)
	}
}
