package dla

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/deadletter/deadletter/internal/dla/jsontext"
	"github.com/tidwall/pretty"
)

// hostileDepth is the depth of the objects that crashed every command with
// a fatal stack overflow: 10 million levels, 20 MB of brackets.
const hostileDepth = 10_000_000

// nested is n arrays, one inside the other.
func nested(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }

func wantTooDeep(t *testing.T, raw []byte, reason string) *Decoded {
	t.Helper()
	d, err := Decode(raw)
	var de *DecodeError
	if !errors.As(err, &de) {
		t.Fatalf("Decode: err %v, want a *DecodeError", err)
	}
	if de.Error() != reason {
		t.Fatalf("reason %q, want %q", de.Error(), reason)
	}
	if d == nil || d.Size != int64(len(raw)) {
		t.Fatalf("decoded %+v, want the size at least", d)
	}
	return d
}

// An object nested 10 million levels deep, at the top or inside any of its
// string-encoded layers, is unreadable with a reason, not a fatal stack
// overflow; what was decoded before the deep layer is kept.
func TestDecodeRefusesHostileDepth(t *testing.T) {
	deep := nested(hostileDepth)
	t.Run("arrays", func(t *testing.T) {
		wantTooDeep(t, []byte(deep), "object is nested deeper than 512 levels")
	})
	t.Run("objects", func(t *testing.T) {
		raw := strings.Repeat(`{"a":`, hostileDepth) + "1" + strings.Repeat("}", hostileDepth)
		wantTooDeep(t, []byte(raw), "object is nested deeper than 512 levels")
	})
	t.Run("Body string", func(t *testing.T) {
		d := wantTooDeep(t, []byte(`{"messageId":"m-1","Body":"`+deep+`"}`), "layer 1 Body is nested deeper than 512 levels")
		if d.MessageID != "m-1" || d.Depth != 1 {
			t.Errorf("message id %q, depth %d: the outer layer was not kept", d.MessageID, d.Depth)
		}
	})
	t.Run("second body layer", func(t *testing.T) {
		raw := `{"messageId":"m-2","Body":"{\"body\":\"` + deep + `\"}"}`
		wantTooDeep(t, []byte(raw), "layer 2 body is nested deeper than 512 levels")
	})
	t.Run("detail string", func(t *testing.T) {
		raw := `{"messageId":"m-3","body":"{\"detail\":\"` + deep + `\"}"}`
		wantTooDeep(t, []byte(raw), "detail is a JSON string nested deeper than 512 levels")
	})
	t.Run("detail.input string", func(t *testing.T) {
		raw := `{"detail":{"executionArn":"arn:aws:states:us-east-1:1:execution:W:x","status":"FAILED","input":"` + deep + `"}}`
		d := wantTooDeep(t, []byte(raw), "detail.input is a JSON string nested deeper than 512 levels")
		if d.ExecutionArn != "arn:aws:states:us-east-1:1:execution:W:x" || d.Status != "FAILED" {
			t.Errorf("execution %q status %q: the detail was not kept", d.ExecutionArn, d.Status)
		}
	})
	t.Run("brackets written as escapes", func(t *testing.T) {
		n := 100_000
		raw := `{"Body":"` + strings.Repeat(`\u005b`, n) + strings.Repeat(`\u005d`, n) + `"}`
		wantTooDeep(t, []byte(raw), "layer 1 Body is nested deeper than 512 levels")
	})
}

// The refusal costs constant memory: the scan allocates nothing, however
// large the object.
func TestDecodeTooDeepInConstantMemory(t *testing.T) {
	raw := []byte(nested(hostileDepth))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range 5 {
		if _, err := Decode(raw); !IsDecodeError(err) {
			t.Fatalf("err %v", err)
		}
	}
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > 64<<10 {
		t.Errorf("5 decodes of a %d-byte object nested %d levels allocated %d bytes", len(raw), hostileDepth, n)
	}
}

// Decode applies the bound exactly as jsontext.TooDeep does (whose
// boundary test is jsontext's TestTooDeepBoundary).
func TestDecodeAppliesTheDepthBound(t *testing.T) {
	for _, c := range []struct {
		name string
		raw  string
		deep bool
	}{
		{"512 levels", nested(jsontext.MaxDepth), false},
		{"513 levels", nested(jsontext.MaxDepth + 1), true},
		{"513 levels of objects", strings.Repeat(`{"k":`, jsontext.MaxDepth+1) + "0" + strings.Repeat("}", jsontext.MaxDepth+1), true},
		{"brackets in a string", `{"a":"` + strings.Repeat("[{", 100_000) + `"}`, false},
		{"after an escaped quote", `{"a":"\"` + strings.Repeat("[", 100_000) + `"}`, false},
		{"after an escaped backslash", `{"a":"\\","b":` + nested(jsontext.MaxDepth+1) + `}`, true},
		{"deep but unbalanced text in a string", `{"a":"` + strings.Repeat("]", 1000) + `","b":` + nested(jsontext.MaxDepth+1) + `}`, true},
		{"many shallow objects", "[" + strings.Repeat(`{"a":[1]},`, 100_000) + "0]", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := jsontext.TooDeep(c.raw); got != c.deep {
				t.Fatalf("jsontext.TooDeep = %v, want %v", got, c.deep)
			}
			_, err := Decode([]byte(c.raw))
			if tooDeep := err != nil && strings.Contains(err.Error(), "nested deeper than 512 levels"); tooDeep != c.deep {
				t.Errorf("Decode: %v", err)
			}
		})
	}
}

// IndentedSize is an upper bound of what show's printer writes.
func TestIndentedSizeBoundsThePrinter(t *testing.T) {
	texts := []string{`{}`, `[]`, `{"a":[1,2,{"b":"x,[y]"}],"c":{"d":null}}`, nested(300),
		"[" + strings.Repeat(`{"k":"v","n":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,34,35]},`, 50) + "0]",
		strings.Repeat("[", 100) + strings.Repeat(`"\"],",`, 1000) + "0" + strings.Repeat("]", 100)}
	for _, e := range loadManifest(t) {
		raw, err := os.ReadFile(filepath.Join(seedDir, e.Key))
		if err != nil {
			t.Fatal(err)
		}
		d, _ := Decode(raw)
		texts = append(texts, string(raw), d.Event, d.Message)
	}
	for _, s := range texts {
		if s == "" {
			continue
		}
		out := pretty.PrettyOptions([]byte(s), &pretty.Options{Width: 100, Prefix: "  ", Indent: "  "})
		if n := jsontext.IndentedSize(s, 2, 2); n < int64(len(out)) {
			t.Errorf("IndentedSize %d < %d printed for %.100s", n, len(out), s)
		}
	}
}
