package archive

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// SetMaxObjectSize lowers the size bound for one test (not parallel ones:
// the bound is package state).
func SetMaxObjectSize(t testing.TB, n int) {
	old := maxObjectSize
	maxObjectSize = n
	t.Cleanup(func() { maxObjectSize = old })
}

// SetQuickReads turns GetInto's short way (quickGet) on or off for one test.
func SetQuickReads(t testing.TB, on bool) {
	old := quickReads
	quickReads = on
	t.Cleanup(func() { quickReads = old })
}

// QuickGet is quickGet: whether it read key itself, and what it gave.
func (l *Local) QuickGet(key string, buf []byte) ([]byte, bool, error) { return l.quickGet(key, buf) }

// WriteDateFolders makes n date folders (2024-01-01 on, 28 days a month)
// below sqs, each with objects named o0 … o<per-1> holding body(date, j),
// and returns their names in order.
func WriteDateFolders(t testing.TB, sqs string, n, per int, body func(date string, j int) []byte) []string {
	t.Helper()
	var dates []string
	for i := range n {
		d := fmt.Sprintf("2024-%02d-%02d", 1+i/28, 1+i%28)
		dates = append(dates, d)
		if err := os.MkdirAll(filepath.Join(sqs, d), 0o755); err != nil {
			t.Fatal(err)
		}
		for j := range per {
			if err := os.WriteFile(filepath.Join(sqs, d, fmt.Sprint("o", j)), body(d, j), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dates
}
