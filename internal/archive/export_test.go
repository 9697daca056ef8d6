package archive

import "testing"

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
