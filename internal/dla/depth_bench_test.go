package dla

import (
	"github.com/deadletter/deadletter/internal/dla/jsontext"
	"os"
	"path/filepath"
	"testing"

	"github.com/tidwall/gjson"
)

// BenchmarkTooDeep measures the depth scan Decode runs on each layer of
// the objects BenchmarkDecode decodes.
func BenchmarkTooDeep(b *testing.B) {
	var objs [][]string
	var total int64
	for _, e := range loadManifest(b) {
		raw, err := os.ReadFile(filepath.Join(seedDir, e.Key))
		if err != nil {
			b.Fatal(err)
		}
		total += int64(len(raw))
		layers := []string{string(raw)}
		v := gjson.Parse(string(raw))
		for {
			body := v.Get("Body")
			if !body.Exists() {
				body = v.Get("body")
			}
			if body.Type != gjson.String {
				break
			}
			layers = append(layers, body.Str)
			v = gjson.Parse(body.Str)
		}
		for _, p := range []string{"detail", "detail.input", "detail.output"} {
			if s := v.Get(p); s.Type == gjson.String {
				layers = append(layers, s.Str)
			}
		}
		objs = append(objs, layers)
	}
	b.SetBytes(total / int64(len(objs)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, l := range objs[i%len(objs)] {
			if jsontext.TooDeep(l) {
				b.Fatal("too deep")
			}
		}
	}
}
