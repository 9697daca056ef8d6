// Package golden is the one golden-file helper of the tests: a file under
// testdata holds the expected output, and `go test ./PKG -update` rewrites
// it from what the test got. A file named *.gz is kept gzipped (a large
// dump of a database's rows). Only tests import it (it registers -update).
package golden

import (
	"bytes"
	"compress/gzip"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files from what the tests get")

// Updating reports whether this run rewrites golden files (-update).
func Updating() bool { return *update }

// Check compares got with the file at path; with -update it writes got
// there instead (creating the directory).
func Check(t testing.TB, path, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := write(path, got); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := read(path)
	if err != nil {
		t.Fatalf("%v (go test -update writes it)", err)
	}
	if got != want {
		shown := got
		if strings.HasSuffix(path, ".gz") {
			shown = firstDiff(want, got) // not the whole dump
		}
		t.Errorf("output differs from %s (go test -update accepts it):\n%s", path, shown)
	}
}

// Match compares got with the file at path and never writes it, even with
// -update: for a second result that must equal the one Check wrote (a
// concurrent run compared with the golden a concurrency-1 run wrote).
func Match(t testing.TB, path, got string) {
	t.Helper()
	want, err := read(path)
	if err != nil {
		t.Fatalf("%v (go test -update writes it)", err)
	}
	if got != want {
		t.Errorf("output differs from %s:\n%s", path, firstDiff(want, got))
	}
}

// firstDiff is the first line where got differs from want, with its number.
func firstDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := range max(len(w), len(g)) {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return fmt.Sprintf("line %d:\n want %s\n got  %s", i+1, wl, gl)
		}
	}
	return "(no line differs)"
}

// read is the golden file at path, gunzipped when its name ends in .gz.
func read(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil || !strings.HasSuffix(path, ".gz") {
		return string(b), err
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	if b, err = io.ReadAll(zr); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return string(b), nil
}

// write writes the golden file at path, gzipped when its name ends in .gz.
func write(path, got string) error {
	b := []byte(got)
	if strings.HasSuffix(path, ".gz") {
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		if _, err := zw.Write(b); err != nil {
			return err
		}
		if err := zw.Close(); err != nil {
			return err
		}
		b = buf.Bytes()
	}
	return os.WriteFile(path, b, 0o644)
}
