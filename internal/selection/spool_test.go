package selection

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// TestSpoolKeepsEveryByte: keys holding newlines, NULs and other bytes come
// back exactly, as many as went in; the spool file is not left on disk.
func TestSpoolKeepsEveryByte(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	s, err := NewSpool()
	if err != nil {
		t.Fatal(err)
	}
	keys := []string{
		"demo/dead-letter-archive/sqs/2024-03-01/x\nbackups/db-dump.sql",
		"demo/dead-letter-archive/sqs/2024-03-01/nul\x00byte",
		"demo/dead-letter-archive/sqs/2024-03-01/ spaces and \r\n ",
		"",
		strings.Repeat("k", 70000),
		"demo/dead-letter-archive/sqs/2024-03-01/\xff\xfe not utf-8",
	}
	for _, k := range keys {
		if err := s.Add(k); err != nil {
			t.Fatal(err)
		}
	}
	if entries, _ := os.ReadDir(os.Getenv("TMPDIR")); len(entries) != 0 {
		t.Errorf("the spool is visible in TMPDIR while open: %v", entries)
	}
	var got []string
	if err := s.Keys(func(k string) error { got = append(got, k); return nil }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, keys) || s.Len() != len(keys) {
		t.Errorf("got %d keys back, want %d, exactly", len(got), len(keys))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}
