package dla

import "github.com/deadletter/deadletter/internal/dla/jsontext"

// The decoder's single-pass scanner of one layer, built on the object walk
// of jsontext. One call of layerScan.scan validates a JSON text with
// exactly the rules of gjson.Valid (the decoder's outputs
// have always depended on them: no UTF-8 check, gjson's number grammar,
// whitespace of space, tab, CR and LF only), and in the same pass
//   - records where each member of the top-level object is (key and value
//     spans), and of the first member named "detail" when it is an object;
//   - unescapes the string values of the top-level Body and body members into
//     reused buffers, with gjson's unescaping (a lone or mismatched surrogate
//     becomes U+FFFD, a high surrogate followed by any \u escape consumes it).
//
// Nothing it returns points into memory the caller does not own: spans are
// offsets into the scanned text. The recursion is bounded: the scan stops
// at the first value nested deeper than jsontext.MaxDepth, where
// jsontext.TooDeep would.

// jsonMember is one member of a scanned object: the key's bytes inside
// its quotes and the value's bytes, as offsets into the scanned text.
type jsonMember struct {
	k0, k1, v0, v1 int
	kEsc           bool // the key holds an escape
	body           bool // the key is Body or body (of a layer)
}

// layerScan is the reusable result of scanning one JSON text.
type layerScan struct {
	kind    byte // first byte of the top-level value
	members []jsonMember
	// upper and lower index the last Body and body members (-1 if none);
	// upperBuf and lowerBuf hold their unescaped values when strings.
	upper, lower       int
	upperBuf, lowerBuf []byte
	// detail indexes the first member named detail (-1 if none), and
	// detailMembers are its members when its value is an object.
	detail        int
	detailMembers []jsonMember
	// src holds a text copied in to be scanned (a body given as an object).
	src    []byte
	keyBuf []byte
	// wantLayer: capture Body, body and detail (a layer); false for a
	// Cumulus message, of which only the top-level members are needed.
	wantLayer bool
	// The Cumulus message, unescaped in the same pass when detail's first
	// status member comes before the first input or output member that it
	// selects: msgFrom is 1 (input) or 2 (output) then, 0 otherwise.
	msgBuf                      []byte
	msgFrom                     int
	statusSeen, statusSucceeded bool
	inputSeen, outputSeen       bool
}

// check scans data and says what jsontext.TooDeep and gjson.Valid would:
// whether data nests deeper than jsontext.MaxDepth (which the scan stops
// at), else whether it is valid JSON. The index is meaningful only when
// valid.
func (ls *layerScan) check(data []byte) (deep, valid bool) {
	switch ls.scan(data) {
	case scanOK:
		return false, true
	case scanTooDeep:
		return true, false
	}
	// Invalid before the bound was reached: the rest may nest deeper.
	return jsontext.TooDeepBytes(data), false
}

const (
	scanOK = iota
	scanInvalid
	scanTooDeep
)

// scan validates data as gjson.Valid does, up to jsontext.MaxDepth
// levels, and indexes it.
func (ls *layerScan) scan(data []byte) int {
	ls.members, ls.detailMembers = ls.members[:0], ls.detailMembers[:0]
	ls.msgFrom, ls.statusSeen, ls.statusSucceeded, ls.inputSeen, ls.outputSeen = 0, false, false, false, false
	ls.upper, ls.lower, ls.detail = -1, -1, -1
	i := 0
	for i < len(data) && jsontext.IsSpace(data[i]) {
		i++
	}
	if i == len(data) {
		return scanInvalid
	}
	ls.kind = data[i]
	var ok bool
	if data[i] == '{' {
		i, ok = ls.object(data, i+1, 1, true)
	} else {
		i, ok = jsontext.ScanValue(data, i, 1)
	}
	switch {
	case !ok && i == jsontext.TooDeepPos:
		return scanTooDeep
	case !ok:
		return scanInvalid
	}
	for ; i < len(data); i++ {
		if !jsontext.IsSpace(data[i]) {
			return scanInvalid
		}
	}
	return scanOK
}

// object validates an object whose '{' is before i, at depth, recording
// its members (top: into ls.members, with the captures; else into
// ls.detailMembers).
func (ls *layerScan) object(data []byte, i, depth int, top bool) (int, bool) {
	i, more, ok := jsontext.FirstElement(data, i, '}')
	for more {
		var m jsonMember
		if m.k0, m.k1, m.kEsc, m.v0, ok = jsontext.MemberKey(data, i); !ok {
			return m.v0, false
		}
		i = m.v0
		var slot int // 1 Body, 2 body, 3 first detail
		if top && ls.wantLayer && (data[i] == '"' || data[i] == '{') {
			name := data[m.k0:m.k1]
			if m.kEsc {
				ls.keyBuf = jsontext.UnescapeTo(ls.keyBuf[:0], name)
				name = ls.keyBuf
			}
			switch {
			case string(name) == "Body":
				slot = 1
			case string(name) == "body":
				slot = 2
			case string(name) == "detail" && ls.detail < 0 && data[i] == '{':
				slot = 3
			}
		}
		if !top {
			slot = ls.detailSlot(data, m, data[i])
		}
		switch {
		case slot == 4:
			ls.msgBuf, i, ok = jsontext.UnescapeString(data, i+1, ls.msgBuf[:0])
		case slot == 1 && data[i] == '"':
			ls.upperBuf, i, ok = jsontext.UnescapeString(data, i+1, ls.upperBuf[:0])
		case slot == 2 && data[i] == '"':
			ls.lowerBuf, i, ok = jsontext.UnescapeString(data, i+1, ls.lowerBuf[:0])
		case slot == 3 && depth >= jsontext.MaxDepth:
			return jsontext.TooDeepPos, false
		case slot == 3:
			i, ok = ls.object(data, i+1, depth+1, false)
		default:
			i, ok = jsontext.ScanValue(data, i, depth+1)
		}
		if !ok {
			return i, false
		}
		m.v1 = i
		if slot == 5 {
			ls.statusSucceeded = ls.isValue(data, m, "SUCCEEDED")
		}
		if top {
			if slot == 0 && ls.wantLayer && data[m.v0] != '"' && data[m.v0] != '{' {
				slot = ls.slotOf(data, m) // Body or body with a value that is not a string
			}
			switch slot {
			case 1:
				ls.upper, m.body = len(ls.members), true
			case 2:
				ls.lower, m.body = len(ls.members), true
			case 3:
				ls.detail = len(ls.members)
			}
			if slot == 0 && ls.wantLayer && ls.detail < 0 && ls.isKey(data, m, "detail") {
				ls.detail = len(ls.members) // a detail that is not an object
			}
			ls.members = append(ls.members, m)
		} else {
			ls.detailMembers = append(ls.detailMembers, m)
		}
		i, more, ok = jsontext.NextElement(data, i, '}')
	}
	return i, ok
}

// detailSlot classifies a member of detail, whose value starts with c: 4
// for the first input or output when the first status selects it and it
// is a string (the message to unescape now), 5 for the first status, 0
// otherwise.
func (ls *layerScan) detailSlot(data []byte, m jsonMember, c byte) int {
	switch k := data[m.k0:m.k1]; {
	case m.kEsc:
		ls.keyBuf = jsontext.UnescapeTo(ls.keyBuf[:0], k)
		k = ls.keyBuf
		fallthrough
	default:
		switch string(k) {
		case "status":
			if !ls.statusSeen {
				ls.statusSeen = true
				return 5
			}
		case "input":
			if !ls.inputSeen {
				ls.inputSeen = true
				if ls.statusSeen && !ls.statusSucceeded && c == '"' {
					ls.msgFrom = 1
					return 4
				}
			}
		case "output":
			if !ls.outputSeen {
				ls.outputSeen = true
				if ls.statusSeen && ls.statusSucceeded && c == '"' {
					ls.msgFrom = 2
					return 4
				}
			}
		}
	}
	return 0
}

// isValue reports whether m's value is the JSON string s, unescaped.
func (ls *layerScan) isValue(data []byte, m jsonMember, s string) bool {
	v := data[m.v0:m.v1]
	if len(v) < 2 || v[0] != '"' {
		return false
	}
	ls.keyBuf = jsontext.UnescapeTo(ls.keyBuf[:0], v[1:len(v)-1])
	return string(ls.keyBuf) == s
}

// slotOf classifies a member whose value is neither a string nor an
// object: 1 for Body, 2 for body, 0 otherwise.
func (ls *layerScan) slotOf(data []byte, m jsonMember) int {
	switch {
	case ls.isKey(data, m, "Body"):
		return 1
	case ls.isKey(data, m, "body"):
		return 2
	}
	return 0
}

// isKey reports whether m's key, unescaped, is name.
func (ls *layerScan) isKey(data []byte, m jsonMember, name string) bool {
	k := data[m.k0:m.k1]
	if !m.kEsc {
		return string(k) == name
	}
	ls.keyBuf = jsontext.UnescapeTo(ls.keyBuf[:0], k)
	return string(ls.keyBuf) == name
}

// keyString is m's key, unescaped, as a new string (or a substring of s,
// the scanned text, when it holds no escape).
func keyString(s string, data []byte, m jsonMember) string {
	if !m.kEsc {
		return s[m.k0:m.k1]
	}
	return string(jsontext.UnescapeTo(nil, data[m.k0:m.k1]))
}

// find returns the first member of ms whose key is name, in the scanned
// text data.
func (ls *layerScan) find(data []byte, ms []jsonMember, name string) (jsonMember, bool) {
	for _, m := range ms {
		if !m.kEsc {
			if string(data[m.k0:m.k1]) == name {
				return m, true
			}
			continue
		}
		ls.keyBuf = jsontext.UnescapeTo(ls.keyBuf[:0], data[m.k0:m.k1])
		if string(ls.keyBuf) == name {
			return m, true
		}
	}
	return jsonMember{}, false
}
