package dla

import (
	"bytes"
	"errors"
	"strings"
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

// TestDecodeErrorOfALargeObjectKeepsNoCopyOfIt: the reason of a large
// object that is not JSON is made at once, and the error holds no copy of
// the object: a scan holds the results of hundreds of objects in flight,
// and a copy of each unreadable 64 MiB object took a search of such an
// archive to gigabytes (a 4 MiB one to 16 times a worker's buffer). The
// text is the one a small object's error makes later.
func TestDecodeErrorOfALargeObjectKeepsNoCopyOfIt(t *testing.T) {
	for _, tc := range []struct {
		in   []byte
		want string
	}{
		{bytes.Repeat([]byte("x"), 1<<20), "object is not valid JSON: invalid character 'x' looking for beginning of value at byte 1"},
		{append([]byte(`{"a":"`), bytes.Repeat([]byte("y"), 1<<20)...), "object is not valid JSON: truncated after 1048582 bytes"},
		{[]byte(`{"messageId":"x","body":"{\"a\":` + strings.Repeat(" ", 1<<20) + `"}`), "layer 1 body is not valid JSON: truncated after 1048581 bytes"},
	} {
		_, err := Decode(tc.in)
		var de *DecodeError
		if !errors.As(err, &de) {
			t.Fatalf("decoded %.20q: %v", tc.in, err)
		}
		if held := cap(de.invalid); held > 64<<10 {
			t.Errorf("%.20q: the error holds a copy of %d bytes", tc.in, held)
		}
		if got := err.Error(); got != tc.want {
			t.Errorf("%.20q: reason %q, want %q", tc.in, got, tc.want)
		}
	}
}
