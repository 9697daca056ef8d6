package archive

import "testing"

// SetMaxObjectSize lowers the size bound for one test (not parallel ones:
// the bound is package state).
func SetMaxObjectSize(t testing.TB, n int) {
	old := maxObjectSize
	maxObjectSize = n
	t.Cleanup(func() { maxObjectSize = old })
}
