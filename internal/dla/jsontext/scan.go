package jsontext

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"unicode/utf16"
	"unicode/utf8"
)

// The scanner: gjson.Valid's grammar, string unescaping with gjson's
// rules, and the word-at-a-time search for the end of a plain string run.
// The pieces are exported for the scanners built on them (the Tape here,
// the decoder's layer scan in package dla): ScanValue validates a value,
// and FirstElement, MemberKey and NextElement walk an object or array one
// member or element at a time, so that a scanner may record what it needs
// of each in the same pass.

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

// IsSpace reports whether c is JSON white space: space, tab, LF or CR.
func IsSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

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

// TooDeepPos is the position ScanValue (and the scanners built on the
// walk) return, with ok false, when a value nests deeper than MaxDepth: it
// stops the scan.
const TooDeepPos = -1

// ScanValue is gjson's validany: it validates the value at i (after any
// white space), at depth (that of an object or array starting at i; 1 for
// a top-level value), and returns the position after it. With ok false the
// position is where the text is invalid, or TooDeepPos.
func ScanValue(data []byte, i, depth int) (int, bool) {
	for ; i < len(data); i++ {
		switch data[i] {
		default:
			return i, false
		case ' ', '\t', '\n', '\r':
			continue
		case '{':
			if depth > MaxDepth {
				return TooDeepPos, false
			}
			return scanObject(data, i+1, depth)
		case '[':
			if depth > MaxDepth {
				return TooDeepPos, false
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
	i, more, ok := FirstElement(data, i, '}')
	for more {
		if _, _, _, i, ok = MemberKey(data, i); !ok {
			return i, false
		}
		if i, ok = ScanValue(data, i, depth+1); !ok {
			return i, false
		}
		i, more, ok = NextElement(data, i, '}')
	}
	return i, ok
}

// scanArray is gjson's validarray.
func scanArray(data []byte, i, depth int) (int, bool) {
	i, more, ok := FirstElement(data, i, ']')
	for more {
		if i, ok = ScanValue(data, i, depth+1); !ok {
			return i, false
		}
		i, more, ok = NextElement(data, i, ']')
	}
	return i, ok
}

// The walk of an object's members or an array's elements that every
// scanner built on this package shares (scanObject, scanArray, the Tape,
// the layer scan of package dla):
//
//	i, more, ok := FirstElement(data, i, end)
//	for more {
//		(an object: MemberKey)
//		scan the value at i
//		i, more, ok = NextElement(data, i, end)
//	}
//	return i, ok

// FirstElement starts the walk of an object or array (end '}' or ']')
// from the byte after its opening bracket: with more, i is at the first
// element (a member's opening quote, if it is one); without, i is after
// the closing bracket (ok) or where the text is invalid.
func FirstElement(data []byte, i int, end byte) (next int, more, ok bool) {
	for ; i < len(data); i++ {
		switch c := data[i]; {
		case c == end:
			return i + 1, false, true
		case !IsSpace(c):
			return i, true, true
		}
	}
	return i, false, false
}

// NextElement follows an element's value, at i: at a ',' the walk goes on
// (more, i at the next element); at the closing bracket it ends (i after
// it).
func NextElement(data []byte, i int, end byte) (next int, more, ok bool) {
	if i, ok = scanComma(data, i, end); !ok {
		return i, false, false
	}
	if data[i] == end {
		return i + 1, false, true
	}
	for i++; i < len(data); i++ {
		if !IsSpace(data[i]) {
			return i, true, true
		}
	}
	return i, false, false
}

// MemberKey scans an object member's key from its opening quote at i, and
// the colon after it: the key's bytes are data[k0:k1] (kEsc: they hold an
// escape), and its value starts at v0.
func MemberKey(data []byte, i int) (k0, k1 int, kEsc bool, v0 int, ok bool) {
	if data[i] != '"' {
		return 0, 0, false, i, false
	}
	k0 = i + 1
	if i, kEsc, ok = scanString(data, k0); !ok {
		return 0, 0, false, i, false
	}
	k1 = i - 1
	if i, ok = scanColon(data, i); !ok {
		return 0, 0, false, i, false
	}
	for i < len(data) && IsSpace(data[i]) {
		i++
	}
	if i == len(data) {
		return 0, 0, false, i, false
	}
	return k0, k1, kEsc, i, true
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

// scanString is gjson's validstring, from the byte after the opening
// quote; esc says whether the string holds an escape.
func scanString(data []byte, i int) (next int, esc, ok bool) {
	for {
		// A word a round, as in UnescapeString: two-byte escapes are
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

// UnescapeString validates the string whose opening quote is before i, as
// gjson.Valid does, and appends its value, unescaped as gjson does, to dst
// (a lone or mismatched surrogate becomes U+FFFD; a high surrogate
// followed by any \u escape takes it as its other half). It returns dst,
// the position after the closing quote and whether the string is valid.
// The value is never longer than its escaped text, so dst is grown once
// and written 8 bytes at a time.
func UnescapeString(data []byte, i int, dst []byte) ([]byte, int, bool) {
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

// UnescapeTo appends the value of the string content s (between its
// quotes, already validated) to dst, exactly as gjson's unescape does.
func UnescapeTo(dst, s []byte) []byte {
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

// SyntaxReason explains why raw is not valid JSON, in encoding/json's words
// ("truncated after 31 bytes", "invalid character 'x' looking for beginning
// of value at byte 10", "empty"). It validates raw again: for the error
// path only.
func SyntaxReason(raw []byte) string {
	if len(bytes.TrimSpace(raw)) == 0 { // no copy of raw
		return "empty"
	}
	var v json.RawMessage
	err := json.Unmarshal(raw, &v)
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se) && (se.Error() == "unexpected end of JSON input" || se.Offset >= int64(len(raw))):
		return fmt.Sprintf("truncated after %d bytes", len(raw))
	case errors.As(err, &se):
		return fmt.Sprintf("%s at byte %d", se.Error(), se.Offset)
	case err != nil:
		return err.Error()
	}
	return "invalid"
}
