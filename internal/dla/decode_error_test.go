package dla

import (
	"sync"
	"testing"
)

// TestDecodeErrorReasonSurvivesTheBufferItCameFrom: the reason of an
// object that is not JSON is worked out only when it is asked for, from a
// copy: a scan reuses its read buffer for the next object at once, and the
// text must still be the first object's, the same for every caller, even
// when several ask at once.
func TestDecodeErrorReasonSurvivesTheBufferItCameFrom(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"messageId": "x", "body": "{}"`, "object is not valid JSON: truncated after 31 bytes"},
		{`{"body": x}`, "object is not valid JSON: invalid character 'x' looking for beginning of value at byte 10"},
		{"   \n", "object is not valid JSON: empty"},
		{`{"messageId":"x","body":"{\"version\":\"0\",\"detail\":"}`, "layer 1 body is not valid JSON: truncated after 24 bytes"},
	} {
		buf := []byte(tc.in)
		_, err := Decode(buf)
		if err == nil {
			t.Fatalf("%s: decoded", tc.in)
		}
		for i := range buf { // the scan's next object
			buf[i] = '{'
		}
		var wg sync.WaitGroup
		got := make([]string, 8)
		for i := range got {
			wg.Add(1)
			go func() { defer wg.Done(); got[i] = err.Error() }()
		}
		wg.Wait()
		for _, g := range got {
			if g != tc.want {
				t.Fatalf("%s: reason %q, want %q", tc.in, g, tc.want)
			}
		}
	}
}
