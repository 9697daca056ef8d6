package cumulusdb

import "testing"

// The parent execution cache holds at most max ids: memory stays flat
// however many executions a run looks up.
func TestBoundedIDsStartsOverWhenFull(t *testing.T) {
	b := newBoundedIDs(3)
	for i, k := range []string{"a", "b", "c"} {
		b.put(k, int64(i))
	}
	if id, ok := b.get("b"); !ok || id != 1 {
		t.Fatalf("get(b) = %d, %v", id, ok)
	}
	b.put("d", 9)
	if _, ok := b.get("a"); ok || len(b.m) != 1 {
		t.Errorf("a full cache kept its entries: %v", b.m)
	}
	if id, ok := b.get("d"); !ok || id != 9 {
		t.Errorf("get(d) = %d, %v", id, ok)
	}
}
