package dla

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzDecode: no input may panic, and a DecodeError is the only error kind.
// Seeds: every Cumulus-written object in the fixture, plus edge cases.
func FuzzDecode(f *testing.F) {
	for _, e := range loadManifest(f) {
		if raw, err := os.ReadFile(filepath.Join(seedDir, e.Key)); err == nil {
			f.Add(raw)
		}
	}
	for _, s := range []string{``, `null`, `[]`, `{"body":null}`, `{"Body":"{\"body\":\"{}\"}"}`, `{"detail":"{\"status\":\"RUNNING\",\"input\":\"{}\"}"}`,
		`{"cumulus_meta":{},"meta":{"collection":{"name":1,"version":true}},"payload":{"granules":[null,1,{}]}}`, `{"body":"\"x\""}`, `{"body":{"body":[1]}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		d, err := Decode(raw)
		if d == nil {
			t.Fatal("Decode returned a nil record")
		}
		if err != nil && !IsDecodeError(err) {
			t.Fatalf("non-decode error %T: %v", err, err)
		}
		_ = ErrorClass(d.Error)
		_ = d.Date()
	})
}
