package dla

import (
	"encoding/binary"
	"math/bits"
	"slices"
	"unicode/utf16"
	"unicode/utf8"
)

// The decoder's single-pass scanner. One call of layerScan.scan validates a
// JSON text with exactly the rules of gjson.Valid (the decoder's outputs
// have always depended on them: no UTF-8 check, gjson's number grammar,
// whitespace of space, tab, CR and LF only), and in the same pass
//   - records where each member of the top-level object is (key and value
//     spans), and of the first member named "detail" when it is an object;
//   - unescapes the string values of the top-level Body and body members into
//     reused buffers, with gjson's unescaping (a lone or mismatched surrogate
//     becomes U+FFFD, a high surrogate followed by any \u escape consumes it).
//
// Nothing it returns points into memory the caller does not own: spans are
// offsets into the scanned text. The recursion is bounded: callers check
// TooDeep first, as the validator gjson.Valid they replace did.

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
}

// strStop marks the bytes that end a run of plain string bytes.
var strStop = func() (t [256]bool) {
	for c := range 0x20 {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

const (
	lo8 = 0x0101010101010101
	hi8 = 0x8080808080808080
)

// stopMask flags (in the high bit of its byte) each byte of the 8 in x
// that ends a run of plain string bytes: below 0x20, '"' or '\\'. A flag
// may also be set above a flagged byte (a borrow), never below one, so the
// lowest flag is exact, and no flag is set when there is no such byte.
func stopMask(x uint64) uint64 {
	q, b := x^(lo8*'"'), x^(lo8*'\\')
	return ((x-lo8*0x20)&^x | (q-lo8)&^q | (b-lo8)&^b) & hi8
}

// plainRun returns the index of the first byte at or after i that ends a
// run of plain string bytes (a control byte, '"' or '\\'), or len(data).
func plainRun(data []byte, i int) int {
	for i+8 <= len(data) {
		if m := stopMask(binary.LittleEndian.Uint64(data[i:])); m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
		i += 8
	}
	for i < len(data) && !strStop[data[i]] {
		i++
	}
	return i
}

func isWS(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func hex4(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		default:
			c -= 'A' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

// scan validates data as gjson.Valid does and indexes it. It reports
// whether data is valid JSON; the index is meaningful only then.
func (ls *layerScan) scan(data []byte) bool {
	ls.members, ls.detailMembers = ls.members[:0], ls.detailMembers[:0]
	ls.upper, ls.lower, ls.detail = -1, -1, -1
	i := 0
	for i < len(data) && isWS(data[i]) {
		i++
	}
	if i == len(data) {
		return false
	}
	ls.kind = data[i]
	var ok bool
	if data[i] == '{' {
		i, ok = ls.object(data, i+1, true)
	} else {
		i, ok = scanAny(data, i)
	}
	if !ok {
		return false
	}
	for ; i < len(data); i++ {
		if !isWS(data[i]) {
			return false
		}
	}
	return true
}

// object validates an object whose '{' is before i, recording its members
// (top: into ls.members, with the captures; else into ls.detailMembers).
func (ls *layerScan) object(data []byte, i int, top bool) (int, bool) {
	var ok bool
	for ; i < len(data); i++ {
		switch data[i] {
		default:
			return i, false
		case ' ', '\t', '\n', '\r':
			continue
		case '}':
			return i + 1, true
		case '"':
		key:
			m := jsonMember{k0: i + 1}
			if i, m.kEsc, ok = scanString(data, i+1); !ok {
				return i, false
			}
			m.k1 = i - 1
			if i, ok = scanColon(data, i); !ok {
				return i, false
			}
			for i < len(data) && isWS(data[i]) {
				i++
			}
			if i == len(data) {
				return i, false
			}
			m.v0 = i
			var slot int // 1 Body, 2 body, 3 first detail
			if top && ls.wantLayer && (data[i] == '"' || data[i] == '{') {
				name := data[m.k0:m.k1]
				if m.kEsc {
					ls.keyBuf = unescapeTo(ls.keyBuf[:0], name)
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
			switch {
			case slot == 1 && data[i] == '"':
				ls.upperBuf, i, ok = unescapeString(data, i+1, ls.upperBuf[:0])
			case slot == 2 && data[i] == '"':
				ls.lowerBuf, i, ok = unescapeString(data, i+1, ls.lowerBuf[:0])
			case slot == 3:
				i, ok = ls.object(data, i+1, false)
			default:
				i, ok = scanAny(data, i)
			}
			if !ok {
				return i, false
			}
			m.v1 = i
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
			if i, ok = scanComma(data, i, '}'); !ok {
				return i, false
			}
			if data[i] == '}' {
				return i + 1, true
			}
			i++
			for ; i < len(data); i++ {
				switch data[i] {
				default:
					return i, false
				case ' ', '\t', '\n', '\r':
					continue
				case '"':
					goto key
				}
			}
			return i, false
		}
	}
	return i, false
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
	ls.keyBuf = unescapeTo(ls.keyBuf[:0], k)
	return string(ls.keyBuf) == name
}

// keyString is m's key, unescaped, as a new string (or a substring of s,
// the scanned text, when it holds no escape).
func keyString(s string, data []byte, m jsonMember) string {
	if !m.kEsc {
		return s[m.k0:m.k1]
	}
	return string(unescapeTo(nil, data[m.k0:m.k1]))
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
		ls.keyBuf = unescapeTo(ls.keyBuf[:0], data[m.k0:m.k1])
		if string(ls.keyBuf) == name {
			return m, true
		}
	}
	return jsonMember{}, false
}

// scanAny is gjson's validany.
func scanAny(data []byte, i int) (int, bool) {
	for ; i < len(data); i++ {
		switch data[i] {
		default:
			return i, false
		case ' ', '\t', '\n', '\r':
			continue
		case '{':
			return scanObject(data, i+1)
		case '[':
			return scanArray(data, i+1)
		case '"':
			i, _, ok := scanString(data, i+1)
			return i, ok
		case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			return scanNumber(data, i)
		case 't':
			return scanLit(data, i+1, "rue")
		case 'f':
			return scanLit(data, i+1, "alse")
		case 'n':
			return scanLit(data, i+1, "ull")
		}
	}
	return i, false
}

// scanObject is gjson's validobject.
func scanObject(data []byte, i int) (int, bool) {
	var ok bool
	for ; i < len(data); i++ {
		switch data[i] {
		default:
			return i, false
		case ' ', '\t', '\n', '\r':
			continue
		case '}':
			return i + 1, true
		case '"':
		key:
			if i, _, ok = scanString(data, i+1); !ok {
				return i, false
			}
			if i, ok = scanColon(data, i); !ok {
				return i, false
			}
			if i, ok = scanAny(data, i); !ok {
				return i, false
			}
			if i, ok = scanComma(data, i, '}'); !ok {
				return i, false
			}
			if data[i] == '}' {
				return i + 1, true
			}
			i++
			for ; i < len(data); i++ {
				switch data[i] {
				default:
					return i, false
				case ' ', '\t', '\n', '\r':
					continue
				case '"':
					goto key
				}
			}
			return i, false
		}
	}
	return i, false
}

func scanColon(data []byte, i int) (int, bool) {
	for ; i < len(data); i++ {
		switch data[i] {
		default:
			return i, false
		case ' ', '\t', '\n', '\r':
			continue
		case ':':
			return i + 1, true
		}
	}
	return i, false
}

func scanComma(data []byte, i int, end byte) (int, bool) {
	for ; i < len(data); i++ {
		switch data[i] {
		default:
			return i, false
		case ' ', '\t', '\n', '\r':
			continue
		case ',':
			return i, true
		case end:
			return i, true
		}
	}
	return i, false
}

// scanArray is gjson's validarray.
func scanArray(data []byte, i int) (int, bool) {
	var ok bool
	for ; i < len(data); i++ {
		switch data[i] {
		default:
			for ; i < len(data); i++ {
				if i, ok = scanAny(data, i); !ok {
					return i, false
				}
				if i, ok = scanComma(data, i, ']'); !ok {
					return i, false
				}
				if data[i] == ']' {
					return i + 1, true
				}
			}
		case ' ', '\t', '\n', '\r':
			continue
		case ']':
			return i + 1, true
		}
	}
	return i, false
}

// scanString is gjson's validstring, from the byte after the opening
// quote; esc says whether the string holds an escape.
func scanString(data []byte, i int) (next int, esc, ok bool) {
	for {
		i = plainRun(data, i)
		if i >= len(data) {
			return i, esc, false
		}
		switch c := data[i]; {
		case c == '"':
			return i + 1, esc, true
		case c < ' ':
			return i, esc, false
		}
		esc = true
		i++
		if i == len(data) {
			return i, esc, false
		}
		switch data[i] {
		default:
			return i, esc, false
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			i++
		case 'u':
			if i+4 >= len(data) || !isHex(data[i+1]) || !isHex(data[i+2]) || !isHex(data[i+3]) || !isHex(data[i+4]) {
				return i, esc, false
			}
			i += 5
		}
	}
}

// unescapeString validates a string as scanString does and appends its
// value, unescaped as gjson does, to dst. The value is never longer than
// its escaped text, so dst is grown once and written 8 bytes at a time.
func unescapeString(data []byte, i int, dst []byte) ([]byte, int, bool) {
	n := len(dst)
	dst = slices.Grow(dst, len(data)-i+8)
	out := dst[:cap(dst)]
	for {
		for i+8 <= len(data) {
			x := binary.LittleEndian.Uint64(data[i:])
			binary.LittleEndian.PutUint64(out[n:], x)
			if m := stopMask(x); m != 0 {
				k := bits.TrailingZeros64(m) / 8
				i, n = i+k, n+k
				goto stop
			}
			i, n = i+8, n+8
		}
		for i < len(data) && !strStop[data[i]] {
			out[n] = data[i]
			i, n = i+1, n+1
		}
	stop:
		if i >= len(data) {
			return out[:n], i, false
		}
		switch c := data[i]; {
		case c == '"':
			return out[:n], i + 1, true
		case c < ' ':
			return out[:n], i, false
		}
		i++
		if i == len(data) {
			return out[:n], i, false
		}
		c := data[i]
		switch c {
		default:
			return out[:n], i, false
		case '"', '\\', '/':
		case 'b':
			c = '\b'
		case 'f':
			c = '\f'
		case 'n':
			c = '\n'
		case 'r':
			c = '\r'
		case 't':
			c = '\t'
		case 'u':
			if i+4 >= len(data) || !isHex(data[i+1]) || !isHex(data[i+2]) || !isHex(data[i+3]) || !isHex(data[i+4]) {
				return out[:n], i, false
			}
			r := hex4(data[i+1:])
			i += 5
			if utf16.IsSurrogate(r) && i+1 < len(data) && data[i] == '\\' && data[i+1] == 'u' {
				// gjson takes the next escape, whatever it is, as the
				// other half of the pair.
				if i+5 >= len(data) || !isHex(data[i+2]) || !isHex(data[i+3]) || !isHex(data[i+4]) || !isHex(data[i+5]) {
					return out[:n], i + 1, false
				}
				r = utf16.DecodeRune(r, hex4(data[i+2:]))
				i += 6
			}
			if r < utf8.RuneSelf {
				out[n] = byte(r)
				n++
			} else {
				n += utf8.EncodeRune(out[n:], r)
			}
			continue
		}
		out[n] = c
		i, n = i+1, n+1
	}
}

// unescapeTo appends the value of the string content s (between its
// quotes) to dst, exactly as gjson's unescape does.
func unescapeTo(dst, s []byte) []byte {
	for i := 0; i < len(s); i++ {
		switch {
		default:
			dst = append(dst, s[i])
		case s[i] < ' ':
			return dst
		case s[i] == '\\':
			i++
			if i >= len(s) {
				return dst
			}
			switch s[i] {
			default:
				return dst
			case '\\':
				dst = append(dst, '\\')
			case '/':
				dst = append(dst, '/')
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case '"':
				dst = append(dst, '"')
			case 'u':
				if i+5 > len(s) {
					return dst
				}
				r := hex4(s[i+1:])
				i += 5
				if utf16.IsSurrogate(r) && len(s[i:]) >= 6 && s[i] == '\\' && s[i+1] == 'u' {
					r = utf16.DecodeRune(r, hex4(s[i+2:]))
					i += 6
				}
				dst = utf8.AppendRune(dst, r)
				i--
			}
		}
	}
	return dst
}

// scanNumber is gjson's validnumber, from the number's first byte.
func scanNumber(data []byte, i int) (int, bool) {
	if data[i] == '-' {
		i++
		if i == len(data) || data[i] < '0' || data[i] > '9' {
			return i, false
		}
	}
	if data[i] == '0' {
		i++
	} else {
		for i < len(data) && data[i] >= '0' && data[i] <= '9' {
			i++
		}
	}
	if i == len(data) {
		return i, true
	}
	if data[i] == '.' {
		i++
		if i == len(data) || data[i] < '0' || data[i] > '9' {
			return i, false
		}
		i++
		for i < len(data) && data[i] >= '0' && data[i] <= '9' {
			i++
		}
	}
	if i == len(data) {
		return i, true
	}
	if data[i] == 'e' || data[i] == 'E' {
		i++
		if i == len(data) {
			return i, false
		}
		if data[i] == '+' || data[i] == '-' {
			i++
		}
		if i == len(data) || data[i] < '0' || data[i] > '9' {
			return i, false
		}
		i++
		for i < len(data) && data[i] >= '0' && data[i] <= '9' {
			i++
		}
	}
	return i, true
}

// scanLit checks the rest of true, false or null.
func scanLit(data []byte, i int, rest string) (int, bool) {
	if i+len(rest) <= len(data) && string(data[i:i+len(rest)]) == rest {
		return i + len(rest), true
	}
	return i, false
}
