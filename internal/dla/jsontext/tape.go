package jsontext

// Tape is the scan of a JSON text: every member and element of the objects
// and arrays down to a chosen depth, in text order, so that the few fields
// a caller reads are found without walking the text again. Its buffers are
// reused from one Check to the next.
type Tape struct {
	// Nodes are the members and elements found, each before those of its
	// own value.
	Nodes  []Node
	keyBuf []byte
}

// Node is one member (K1 > K0, or an empty key K0 == K1 >= 1) or element
// (K0 == 0) of the container node Parent (-1: the top-level value). The
// spans are offsets into the text: the key's bytes inside its quotes, and
// the value. Next is the index of the node after its subtree (its next
// sibling, if any), so a container's children are found without visiting
// the rest.
type Node struct {
	Parent, K0, K1, V0, V1, Next int
	KEsc                         bool // the key holds an escape
}

// Check scans data, recording the members and elements of the objects and
// arrays at most depth levels deep (1: those of the top-level value), and
// says what TooDeepBytes and gjson.ValidBytes would: whether data nests
// deeper than MaxDepth (which the scan stops at), else whether it is valid
// JSON. The nodes are meaningful only when valid.
func (tp *Tape) Check(data []byte, depth int) (deep, valid bool) {
	tp.Nodes = tp.Nodes[:0]
	i := 0
	for i < len(data) && IsSpace(data[i]) {
		i++
	}
	ok := i < len(data)
	if ok {
		i, ok = tp.value(data, i, 1, -1, depth)
	}
	switch {
	case !ok && i == TooDeepPos:
		return true, false
	case !ok:
		return TooDeepBytes(data), false
	}
	for ; i < len(data); i++ {
		if !IsSpace(data[i]) {
			return TooDeepBytes(data), false
		}
	}
	return false, true
}

// value scans the value at i (after whitespace), at depth, recording the
// members or elements of an object or array at depth <= keep as children
// of parent.
func (tp *Tape) value(data []byte, i, depth, parent, keep int) (int, bool) {
	switch {
	case depth > keep || (data[i] != '{' && data[i] != '['):
		return ScanValue(data, i, depth)
	case depth > MaxDepth:
		return TooDeepPos, false
	}
	end := byte('}')
	if data[i] == '[' {
		end = ']'
	}
	i, more, ok := FirstElement(data, i+1, end)
	for more {
		n := Node{Parent: parent}
		if end == '}' {
			if n.K0, n.K1, n.KEsc, i, ok = MemberKey(data, i); !ok {
				return i, false
			}
		}
		n.V0 = i
		at := len(tp.Nodes)
		tp.Nodes = append(tp.Nodes, n)
		if i, ok = tp.value(data, i, depth+1, at, keep); !ok {
			return i, false
		}
		tp.Nodes[at].V1, tp.Nodes[at].Next = i, len(tp.Nodes)
		i, more, ok = NextElement(data, i, end)
	}
	return i, ok
}

// Child returns the first member named name of the container node p (-1:
// the top-level value) of the checked text data, or -1.
func (tp *Tape) Child(data []byte, p int, name string) int {
	end := len(tp.Nodes)
	if p >= 0 {
		end = tp.Nodes[p].Next
	}
	for j := p + 1; j < end; j = tp.Nodes[j].Next {
		n := tp.Nodes[j]
		if n.K0 == 0 {
			continue
		}
		k := data[n.K0:n.K1]
		if n.KEsc {
			tp.keyBuf = UnescapeTo(tp.keyBuf[:0], k)
			k = tp.keyBuf
		}
		if string(k) == name {
			return j
		}
	}
	return -1
}

// Capacity is what the tape's buffers hold: nodes, and bytes of key, so
// that a pool may drop a tape grown by a large text.
func (tp *Tape) Capacity() (nodes, keyBytes int) { return cap(tp.Nodes), cap(tp.keyBuf) }
