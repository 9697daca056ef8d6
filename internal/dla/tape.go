package dla

import (
	"strings"

	"github.com/tidwall/gjson"
)

// The message tape: the few fields of a Cumulus message the decoder reads
// (its collection, provider and granules), found in one pass over it.

// msgTape is the scan of a Cumulus message: every member and element of
// the objects and arrays down to tapeDepth, in text order, so that the
// fields MessageFields reads are found without walking the text again.
type msgTape struct {
	nodes  []tapeNode
	keyBuf []byte
}

// tapeDepth: payload.granules[i].granuleId is a member at depth 4.
const tapeDepth = 4

// tapeNode is one member (k1 > k0, or an empty key k0 == k1 >= 1) or
// element (k0 == 0) of the container node parent (-1: the message).
// next is the index of the node after its subtree (its next sibling, if
// any), so a container's children are found without visiting the rest.
type tapeNode struct {
	parent, k0, k1, v0, v1, next int
	kEsc                         bool
}

// check is layerScan.check for a message.
func (tp *msgTape) check(data []byte) (deep, valid bool) {
	tp.nodes = tp.nodes[:0]
	i := 0
	for i < len(data) && isWS(data[i]) {
		i++
	}
	ok := i < len(data)
	if ok {
		i, ok = tp.value(data, i, 1, -1)
	}
	switch {
	case !ok && i == tooDeep:
		return true, false
	case !ok:
		return TooDeepBytes(data), false
	}
	for ; i < len(data); i++ {
		if !isWS(data[i]) {
			return TooDeepBytes(data), false
		}
	}
	return false, true
}

// value scans the value at i (after whitespace), at depth, recording the
// members or elements of an object or array at depth <= tapeDepth as
// children of parent.
func (tp *msgTape) value(data []byte, i, depth, parent int) (int, bool) {
	switch {
	case depth > tapeDepth || (data[i] != '{' && data[i] != '['):
		return scanAny(data, i, depth)
	case depth > MaxDepth:
		return tooDeep, false
	}
	end := byte('}')
	if data[i] == '[' {
		end = ']'
	}
	i, more, ok := firstElement(data, i+1, end)
	for more {
		n := tapeNode{parent: parent}
		if end == '}' {
			if n.k0, n.k1, n.kEsc, i, ok = memberKey(data, i); !ok {
				return i, false
			}
		}
		n.v0 = i
		at := len(tp.nodes)
		tp.nodes = append(tp.nodes, n)
		if i, ok = tp.value(data, i, depth+1, at); !ok {
			return i, false
		}
		tp.nodes[at].v1, tp.nodes[at].next = i, len(tp.nodes)
		i, more, ok = nextElement(data, i, end)
	}
	return i, ok
}

// child returns the first member named name of the container node p
// (-1: the message), or -1.
func (tp *msgTape) child(data []byte, p int, name string) int {
	end := len(tp.nodes)
	if p >= 0 {
		end = tp.nodes[p].next
	}
	for j := p + 1; j < end; j = tp.nodes[j].next {
		n := tp.nodes[j]
		if n.k0 == 0 {
			continue
		}
		k := data[n.k0:n.k1]
		if n.kEsc {
			tp.keyBuf = unescapeTo(tp.keyBuf[:0], k)
			k = tp.keyBuf
		}
		if string(k) == name {
			return j
		}
	}
	return -1
}

// messageFields is MessageFields of the scanned message (text, whose bytes
// are data), with the same rules, reading the values from the tape.
func (tp *msgTape) messageFields(data []byte, text string) (collectionID, providerID, granules string) {
	collectionID, providerID, granules = "null", "null", "null"
	res := func(j int) gjson.Result {
		if j < 0 {
			return gjson.Result{}
		}
		return gjson.Parse(text[tp.nodes[j].v0:tp.nodes[j].v1])
	}
	isObject := func(j int) bool { return j < 0 || data[tp.nodes[j].v0] == '{' }
	// get is pick: nothing from a value that is not an object.
	get := func(p int, name string) int {
		if p == -2 || !isObject(p) {
			return -2
		}
		if j := tp.child(data, p, name); j >= 0 {
			return j
		}
		return -2
	}
	resOf := func(j int) gjson.Result {
		if j == -2 {
			return gjson.Result{}
		}
		return res(j)
	}
	meta, payload := get(-1, "meta"), get(-1, "payload")
	coll, prov := get(meta, "collection"), get(meta, "provider")
	name, version := resOf(get(coll, "name")), resOf(get(coll, "version"))
	if jsTruthy(name) && jsTruthy(version) {
		collectionID = QuoteJS(jsStringOf(name) + "___" + jsStringOf(version))
	}
	if prov != -2 && isObject(prov) {
		id, protocol, host, port := resOf(get(prov, "id")), resOf(get(prov, "protocol")), resOf(get(prov, "host")), resOf(get(prov, "port"))
		if id.Type == gjson.String && protocol.Type == gjson.String && host.Type == gjson.String &&
			(!port.Exists() || port.Type == gjson.Number) {
			providerID = truthyRaw(id)
		}
	}
	if gs := get(payload, "granules"); gs != -2 && data[tp.nodes[gs].v0] == '[' {
		var b strings.Builder
		b.WriteByte('[')
		for j := gs + 1; j < tp.nodes[gs].next; j = tp.nodes[j].next {
			if b.Len() > 1 {
				b.WriteByte(',')
			}
			b.WriteString(truthyRaw(resOf(get(j, "granuleId"))))
		}
		b.WriteByte(']')
		granules = b.String()
	}
	return collectionID, providerID, granules
}
