package dla

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkDecode measures decode throughput on the objects Cumulus v21
// wrote (1 to 3 layers, every status). MB/s is per core: the benchmark runs
// on one goroutine.
func BenchmarkDecode(b *testing.B) {
	var objs [][]byte
	var total int64
	for _, e := range loadManifest(b) {
		raw, err := os.ReadFile(filepath.Join(seedDir, e.Key))
		if err != nil {
			b.Fatal(err)
		}
		objs = append(objs, raw)
		total += int64(len(raw))
	}
	b.SetBytes(total / int64(len(objs)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		Decode(objs[i%len(objs)])
	}
}

// BenchmarkPrefilter measures the byte prefilter that lets search skip
// decoding objects that cannot match.
func BenchmarkPrefilter(b *testing.B) {
	var objs [][]byte
	var total int64
	for _, e := range loadManifest(b) {
		raw, _ := os.ReadFile(filepath.Join(seedDir, e.Key))
		objs = append(objs, raw)
		total += int64(len(raw))
	}
	f := (&Filter{Granules: []string{"MOD09GQ.A2099001.h00v00.006.2099001000000"}}).Prefilter()
	b.SetBytes(total / int64(len(objs)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f(objs[i%len(objs)])
	}
}
