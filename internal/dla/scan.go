package dla

import (
	"encoding/binary"
	"math/bits"
	"slices"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/tidwall/gjson"
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
// offsets into the scanned text. The recursion is bounded: the scan stops
// at the first value nested deeper than MaxDepth, where TooDeep would.

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

// exactStopMask flags (in the high bit of its byte) exactly the bytes of
// the 8 in x that end a run of plain string bytes: below 0x20, '"' or '\\'.
func exactStopMask(x uint64) uint64 {
	const lo7 = lo8 * 0x7f
	q, b := x^(lo8*'"'), x^(lo8*'\\')
	isQ := ^((q&lo7 + lo7) | q)
	isB := ^((b&lo7 + lo7) | b)
	ctl := ^((x&lo7 + lo8*(0x80-0x20)) | x)
	return (isQ | isB | ctl) & hi8
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

// check scans data and says what TooDeep and gjson.Valid would: whether
// data nests deeper than MaxDepth (which the scan stops at), else whether
// it is valid JSON. The index is meaningful only when valid.
func (ls *layerScan) check(data []byte) (deep, valid bool) {
	switch ls.scan(data) {
	case scanOK:
		return false, true
	case scanTooDeep:
		return true, false
	}
	// Invalid before the bound was reached: the rest may nest deeper.
	return TooDeepBytes(data), false
}

const (
	scanOK = iota
	scanInvalid
	scanTooDeep
)

// tooDeep is the position the scan functions return when a value nests
// deeper than MaxDepth (with ok false); it stops the scan.
const tooDeep = -1

// scan validates data as gjson.Valid does, up to MaxDepth levels, and
// indexes it.
func (ls *layerScan) scan(data []byte) int {
	ls.members, ls.detailMembers = ls.members[:0], ls.detailMembers[:0]
	ls.msgFrom, ls.statusSeen, ls.statusSucceeded, ls.inputSeen, ls.outputSeen = 0, false, false, false, false
	ls.upper, ls.lower, ls.detail = -1, -1, -1
	i := 0
	for i < len(data) && isWS(data[i]) {
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
		i, ok = scanAny(data, i, 1)
	}
	switch {
	case !ok && i == tooDeep:
		return scanTooDeep
	case !ok:
		return scanInvalid
	}
	for ; i < len(data); i++ {
		if !isWS(data[i]) {
			return scanInvalid
		}
	}
	return scanOK
}

// object validates an object whose '{' is before i, at depth, recording
// its members (top: into ls.members, with the captures; else into
// ls.detailMembers).
func (ls *layerScan) object(data []byte, i, depth int, top bool) (int, bool) {
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
			if !top {
				slot = ls.detailSlot(data, m, data[i])
			}
			switch {
			case slot == 4:
				ls.msgBuf, i, ok = unescapeString(data, i+1, ls.msgBuf[:0])
			case slot == 1 && data[i] == '"':
				ls.upperBuf, i, ok = unescapeString(data, i+1, ls.upperBuf[:0])
			case slot == 2 && data[i] == '"':
				ls.lowerBuf, i, ok = unescapeString(data, i+1, ls.lowerBuf[:0])
			case slot == 3 && depth >= MaxDepth:
				return tooDeep, false
			case slot == 3:
				i, ok = ls.object(data, i+1, depth+1, false)
			default:
				i, ok = scanAny(data, i, depth+1)
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

// detailSlot classifies a member of detail, whose value starts with c: 4
// for the first input or output when the first status selects it and it
// is a string (the message to unescape now), 5 for the first status, 0
// otherwise.
func (ls *layerScan) detailSlot(data []byte, m jsonMember, c byte) int {
	switch k := data[m.k0:m.k1]; {
	case m.kEsc:
		ls.keyBuf = unescapeTo(ls.keyBuf[:0], k)
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
	ls.keyBuf = unescapeTo(ls.keyBuf[:0], v[1:len(v)-1])
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

// scanAny is gjson's validany, for a value at depth (that of an object or
// array starting at i).
func scanAny(data []byte, i, depth int) (int, bool) {
	for ; i < len(data); i++ {
		switch data[i] {
		default:
			return i, false
		case ' ', '\t', '\n', '\r':
			continue
		case '{':
			if depth > MaxDepth {
				return tooDeep, false
			}
			return scanObject(data, i+1, depth)
		case '[':
			if depth > MaxDepth {
				return tooDeep, false
			}
			return scanArray(data, i+1, depth)
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
func scanObject(data []byte, i, depth int) (int, bool) {
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
			if i, ok = scanAny(data, i, depth+1); !ok {
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
func scanArray(data []byte, i, depth int) (int, bool) {
	var ok bool
	for ; i < len(data); i++ {
		switch data[i] {
		default:
			for ; i < len(data); i++ {
				if i, ok = scanAny(data, i, depth+1); !ok {
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
		// A word a round, as in unescapeString: two-byte escapes are
		// skipped here, any other stop is left to the switch below.
	words:
		for i+8 <= len(data) {
			x := binary.LittleEndian.Uint64(data[i:])
			for m := exactStopMask(x); m != 0; {
				p := bits.TrailingZeros64(m) >> 3
				if p == 7 || byte(x>>(8*p)) != '\\' || unescByte[byte(x>>(8*p+8))] == 0 {
					i += p
					break words
				}
				esc = true
				if p == 6 {
					break
				}
				m &= ^uint64(0) << (8 * (p + 2))
			}
			i += 8
		}
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

// unescByte maps the byte after a backslash to the byte a two-byte escape
// stands for (0: not a two-byte escape: \\u or invalid).
var unescByte = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// unescapeString validates a string as scanString does and appends its
// value, unescaped as gjson does, to dst. The value is never longer than
// its escaped text, so dst is grown once and written 8 bytes at a time.
func unescapeString(data []byte, i int, dst []byte) ([]byte, int, bool) {
	n := len(dst)
	dst = slices.Grow(dst, len(data)-i+8)
	out := dst[:cap(dst)]
	for {
		// One word of 8 input bytes a round, whatever it holds, so that the
		// next load does not wait for this word's stops to be found:
		// nested bodies hold an escape every few bytes. The word is stored
		// whole, then after each two-byte escape in it the rest of the word
		// is stored again, shifted into place. A quote, a control byte, a
		// \u escape or a backslash in the word's last byte leaves for the
		// switch below.
		for i+8 <= len(data) {
			x := binary.LittleEndian.Uint64(data[i:])
			binary.LittleEndian.PutUint64(out[n:], x)
			m := exactStopMask(x)
			off := 0 // bytes of the word consumed
			for m != 0 {
				p := bits.TrailingZeros64(m) >> 3
				n += p - off
				if p == 7 || byte(x>>(8*p)) != '\\' {
					i += p
					goto stop
				}
				c := unescByte[byte(x>>(8*p+8))]
				if c == 0 {
					i += p
					goto stop
				}
				out[n] = c
				n++
				off = p + 2
				if off == 8 {
					break
				}
				binary.LittleEndian.PutUint64(out[n:], x>>(8*off))
				m &= ^uint64(0) << (8 * off)
			}
			i, n = i+8, n+8-off
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
	var ok bool
	for i++; i < len(data); i++ {
		switch c := data[i]; {
		case isWS(c):
			continue
		case c == end:
			return i + 1, true
		case end == '}' && c != '"':
			return i, false
		}
		for {
			n := tapeNode{parent: parent}
			if end == '}' {
				if data[i] != '"' {
					return i, false
				}
				n.k0 = i + 1
				if i, n.kEsc, ok = scanString(data, i+1); !ok {
					return i, false
				}
				n.k1 = i - 1
				if i, ok = scanColon(data, i); !ok {
					return i, false
				}
			}
			for i < len(data) && isWS(data[i]) {
				i++
			}
			if i == len(data) {
				return i, false
			}
			n.v0 = i
			at := len(tp.nodes)
			tp.nodes = append(tp.nodes, n)
			if i, ok = tp.value(data, i, depth+1, at); !ok {
				return i, false
			}
			tp.nodes[at].v1, tp.nodes[at].next = i, len(tp.nodes)
			if i, ok = scanComma(data, i, end); !ok {
				return i, false
			}
			if data[i] == end {
				return i + 1, true
			}
			for i++; i < len(data) && isWS(data[i]); i++ {
			}
			if i == len(data) {
				return i, false
			}
		}
	}
	return i, false
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
