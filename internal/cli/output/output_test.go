package output

import (
	"bytes"
	"testing"

	"github.com/deadletter/deadletter/internal/cli/iostreams"
)

func TestJSONStream(t *testing.T) {
	var b bytes.Buffer
	s := NewJSONStream(&b, false)
	s.Close()
	if b.String() != "[]\n" {
		t.Errorf("empty array = %q", b.String())
	}
	b.Reset()
	s = NewJSONStream(&b, false)
	s.Write(map[string]any{"a": 1})
	s.Write(map[string]any{"b": nil})
	s.Close()
	if want := "[\n  {\n    \"a\": 1\n  },\n  {\n    \"b\": null\n  }\n]\n"; b.String() != want {
		t.Errorf("array = %q, want %q", b.String(), want)
	}
	b.Reset()
	s = NewJSONStream(&b, true)
	s.Write(map[string]any{"a": 1})
	s.Write(map[string]any{"b": "x"})
	s.Close()
	if want := "{\"a\":1}\n{\"b\":\"x\"}\n"; b.String() != want {
		t.Errorf("ndjson = %q, want %q", b.String(), want)
	}
}

func TestPipedTableKeepsOneLinePerRow(t *testing.T) {
	ios, _, out, _ := iostreams.Test()
	tbl := NewTable(ios, "A", "B")
	tbl.Row("x\ty", "line one\nline two")
	tbl.Flush()
	if want := "x y\tline one line two\n"; out.String() != want {
		t.Errorf("piped row = %q, want %q", out.String(), want)
	}
}
