package output

import (
	"slices"
	"strings"

	"bytes"
	"github.com/mattn/go-runewidth"
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

// keyedTable renders rows of a KEY, DATE, STATUS, ERROR table whose key is
// kept (KeepKey), on a terminal cols wide.
func keyedTable(t *testing.T, cols int, wide bool, rows ...[]string) (string, Fitting) {
	t.Helper()
	ios, _, out, _ := iostreams.Test()
	ios.SetTTY(false, true, false)
	ios.SetEnv(func(k string) string { return map[string]string{"NO_COLOR": "1"}[k] })
	ios.SetWidth(cols)
	tbl := NewTable(ios, "KEY", "DATE", "STATUS", "ERROR")
	tbl.KeepKey(0, 1, 2)
	tbl.SetWide(wide)
	for _, r := range rows {
		tbl.Row(r...)
	}
	if err := tbl.Flush(); err != nil {
		t.Fatal(err)
	}
	return out.String(), tbl.Fitted()
}

// Issue 38 item 7: a table fitted to the terminal cut every column alike,
// so each key became "sqs/2024-03…" and no row could be told apart. The
// key now stays whole while the other columns are left out (in the order
// given) or shortened; where even the key alone does not fit, each row
// shows the key's unique tail, the shortest end no other key shares.
func TestKeyedTableKeepsTheKeyWholeOrItsUniqueTail(t *testing.T) {
	key1 := "sqs/2024-03-02/49373414-fb81-4e23-8da5-91186042e9bf-cacb018c-3384-4861-9511-6bd766e32aef"
	key2 := "sqs/2024-03-02/57fe541f-f456-4212-af8f-762b60e2f974-7b76290b-cf2c-4861-9511-6bd766e32aef" // shares a 20-character end with key1
	errText := "KnexTimeoutError: Knex: Timeout acquiring a connection. The pool is probably full."
	rows := [][]string{{key1, "2024-03-02", "FAILED", errText}, {key2, "2024-03-02", "RUNNING", errText}}
	lines := func(s string) []string { return strings.Split(strings.TrimSuffix(s, "\n"), "\n") }

	// 200 columns: every key whole, DATE and STATUS kept, the error shortened.
	out, fit := keyedTable(t, 200, false, rows...)
	for _, k := range []string{key1, key2} {
		if !strings.Contains(out, " "+k+" ") {
			t.Errorf("200 columns: key %s is not whole:\n%s", k, out)
		}
	}
	if len(fit.Dropped) != 0 || fit.Tails || !strings.Contains(out, "2024-03-02") {
		t.Errorf("200 columns: fitting %+v:\n%s", fit, out)
	}
	// 120 columns: the keys whole; DATE, then STATUS left out.
	out, fit = keyedTable(t, 120, false, rows...)
	if !strings.Contains(out, " "+key1+" ") || fit.Tails || !slices.Equal(fit.Dropped, []string{"DATE"}) || !strings.Contains(out, "Knex") {
		t.Errorf("120 columns: fitting %+v:\n%s", fit, out)
	}
	// 80 columns: a key is wider than the terminal: each row shows the
	// unique end of its key, and the other columns come back.
	out, fit = keyedTable(t, 80, false, rows...)
	if !fit.Tails || len(fit.Dropped) != 0 {
		t.Errorf("80 columns: fitting %+v:\n%s", fit, out)
	}
	ls := lines(out)
	for i, k := range []string{key1, key2} {
		cell := strings.Fields(ls[i+1])[0]
		tail, ok := strings.CutPrefix(cell, "…")
		if !ok || !strings.HasSuffix(k, tail) || strings.HasSuffix([]string{key2, key1}[i], tail) || len(tail) < minTail {
			t.Errorf("80 columns: row %d's key cell %q is not a unique tail of %s:\n%s", i+1, cell, k, out)
		}
	}
	for _, l := range ls {
		if w := runewidth.StringWidth(l); w > 80 {
			t.Errorf("80 columns: a line %d wide: %q", w, l)
		}
	}
	// -o wide: every column and cell whole, however wide.
	out, fit = keyedTable(t, 80, true, rows...)
	if !strings.Contains(out, key1) || !strings.Contains(out, errText) || !strings.Contains(out, "2024-03-02") || fit.Tails || len(fit.Dropped) != 0 {
		t.Errorf("wide: fitting %+v:\n%s", fit, out)
	}
}

func TestAgreeFollowsTheCount(t *testing.T) {
	for n, want := range map[int]string{0: "0 messages belong", 1: "1 message belongs", 2: "2 messages belong"} {
		if got := Plural(n, "message") + " " + Agree(n, "belongs", "belong"); got != want {
			t.Errorf("%d: %q, want %q", n, got, want)
		}
	}
}
