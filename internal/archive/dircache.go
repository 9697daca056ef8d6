package archive

import "os"

// maxDirFiles bounds the folders kept open for reading (dirCache). A scan
// reads its folders in order, a few dozen at a time at most, so the oldest
// one kept is the one to let go. Kept low for the descriptor table's sake:
// a process's table starts with 64 slots, and each time it doubles in a
// threaded process every thread that opens a file waits for an RCU grace
// period (milliseconds); the folders dropped and left to the garbage
// collector to close took a scan of five years of date folders past 1,000
// descriptors, a fifth of its time (0.15 s against 0.13 s with the table
// grown once beforehand).
const maxDirFiles = 48

// dirHandle is a folder opened for reading, used by reads that open its
// objects relative to it. It is closed as soon as it is both dropped from
// the cache and not in use, never while a read uses its descriptor (a
// closed descriptor's number is reused by the next open: an openat
// relative to it would look in another folder).
type dirHandle struct {
	f       *os.File
	refs    int // reads using f
	dropped bool
}

// dirCache holds dirHandles by folder, at most maxDirFiles, letting the
// oldest go first. Every method is called with Local.foldersMu held.
type dirCache struct {
	m     map[folderKey]*dirHandle
	order []folderKey // as put, oldest first; may hold keys dropped since
}

// acquire is k's handle, in use until release; nil if k is not kept.
func (c *dirCache) acquire(k folderKey) *dirHandle {
	h := c.m[k]
	if h != nil {
		h.refs++
	}
	return h
}

// release ends a use of h, closing it if it was dropped meanwhile.
func (c *dirCache) release(h *dirHandle) {
	h.refs--
	if h.dropped && h.refs == 0 {
		h.f.Close()
	}
}

// put keeps f as k's folder and returns its handle, acquired once, or nil
// when k is kept already (the caller then closes f and may acquire k's).
// To make room it lets the oldest folders go, but never keep (the parent
// a listing opens the next folders through).
func (c *dirCache) put(k folderKey, f *os.File, keep folderKey) *dirHandle {
	if c.m[k] != nil {
		return nil
	}
	if c.m == nil {
		c.m = map[folderKey]*dirHandle{}
	}
	for len(c.m) >= maxDirFiles && len(c.order) > 0 {
		old := c.order[0]
		c.order = c.order[1:]
		if old == keep && c.m[old] != nil {
			c.order = append(c.order, old)
			if len(c.order) == 1 {
				break
			}
			continue
		}
		c.drop(old)
	}
	h := &dirHandle{f: f, refs: 1}
	c.m[k] = h
	c.order = append(c.order, k)
	if len(c.order) > 2*maxDirFiles {
		c.compact()
	}
	return h
}

// compact drops from order the keys no longer kept, and all but the last
// of a key put more than once (folders dropped by a move or a prune leave
// their keys behind, and an old one would let a folder put again go
// early).
func (c *dirCache) compact() {
	last := make(map[folderKey]int, len(c.m))
	for i, k := range c.order {
		last[k] = i
	}
	kept := c.order[:0]
	for i, k := range c.order {
		if c.m[k] != nil && last[k] == i {
			kept = append(kept, k)
		}
	}
	c.order = kept
}

// drop lets k's folder go: closed now, or by the last read using it.
func (c *dirCache) drop(k folderKey) {
	h := c.m[k]
	if h == nil {
		return
	}
	delete(c.m, k)
	h.dropped = true
	if h.refs == 0 {
		h.f.Close()
	}
}
