package jsontext

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Cumulus's DLA writer stores JSON.stringify(JSON.parse(text)) of what it
// reads: the text a Node.js program would write. Stringify reproduces it,
// so that an archive object written here holds the same bytes Cumulus v21
// would have written:
//   - a repeated key keeps the place of its first appearance and the value
//     of its last;
//   - keys that are array indices ("0", "17") come first, in numeric order,
//     then the others in the order they appeared (ECMAScript's
//     OrdinaryOwnPropertyKeys);
//   - numbers are read as IEEE doubles and written as Number.prototype.
//     toString writes them (12345678901234567890 becomes
//     12345678901234567000, 1.0 becomes 1, 1e21 stays 1e+21); a number too
//     large for a double is Infinity, written null;
//   - strings are written with only '"', '\\' and control characters
//     escaped (no HTML escaping, U+2028 kept as is); a lone surrogate given
//     as an escape (\ud800) is written as the same escape, as
//     well-formed JSON.stringify does; bytes that are not UTF-8 become
//     U+FFFD, as Node decodes them.

// ErrNotJSON is returned (wrapped) by Stringify for text that is not one
// JSON value, or that nests deeper than MaxDepth.
var ErrNotJSON = errors.New("not valid JSON")

// Stringify is JavaScript's JSON.stringify(JSON.parse(text)).
func Stringify(text string) (string, error) {
	if TooDeep(text) {
		return "", fmt.Errorf("%w: %s", ErrNotJSON, DepthReason)
	}
	p := jsParser{s: text}
	p.space()
	var b strings.Builder
	b.Grow(len(text))
	if err := p.value(&b); err != nil {
		return "", err
	}
	p.space()
	if p.i != len(p.s) {
		return "", p.fail("text after the value")
	}
	return b.String(), nil
}

// QuoteJS is JSON.stringify of a string: s as a JSON string literal, with
// the escapes JavaScript writes.
func QuoteJS(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		writeJSRune(&b, r)
		i += n
	}
	b.WriteByte('"')
	return b.String()
}

func writeJSRune(b *strings.Builder, r rune) {
	switch r {
	case '"':
		b.WriteString(`\"`)
	case '\\':
		b.WriteString(`\\`)
	case '\b':
		b.WriteString(`\b`)
	case '\f':
		b.WriteString(`\f`)
	case '\n':
		b.WriteString(`\n`)
	case '\r':
		b.WriteString(`\r`)
	case '\t':
		b.WriteString(`\t`)
	default:
		switch {
		case r < 0x20 || (r >= 0xD800 && r <= 0xDFFF):
			fmt.Fprintf(b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
}

// JSNumber is Number.prototype.toString of a finite double; "null" for a
// non-finite one (what JSON.stringify writes).
func JSNumber(f float64) string {
	switch {
	case math.IsNaN(f) || math.IsInf(f, 0):
		return "null"
	case f == 0:
		return "0"
	case f < 0:
		return "-" + JSNumber(-f)
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // d.ddde±x, shortest round trip
	mant, exp, _ := strings.Cut(e, "e")
	digits := strings.Replace(mant, ".", "", 1)
	x, _ := strconv.Atoi(exp)
	k, n := len(digits), x+1
	switch {
	case k <= n && n <= 21:
		return digits + strings.Repeat("0", n-k)
	case 0 < n && n <= 21:
		return digits[:n] + "." + digits[n:]
	case -6 < n && n <= 0:
		return "0." + strings.Repeat("0", -n) + digits
	}
	sign := "+"
	if n-1 < 0 {
		sign = "-"
	}
	exps := strconv.Itoa(abs(n - 1))
	if k == 1 {
		return digits + "e" + sign + exps
	}
	return digits[:1] + "." + digits[1:] + "e" + sign + exps
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

type jsParser struct {
	s string
	i int
}

func (p *jsParser) fail(what string) error {
	return fmt.Errorf("%w: %s at byte %d", ErrNotJSON, what, p.i)
}

func (p *jsParser) space() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *jsParser) value(b *strings.Builder) error {
	if p.i >= len(p.s) {
		return p.fail("unexpected end")
	}
	switch c := p.s[p.i]; {
	case c == '{':
		return p.object(b)
	case c == '[':
		return p.array(b)
	case c == '"':
		return p.str(b)
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number(b)
	default:
		for _, lit := range []string{"true", "false", "null"} {
			if strings.HasPrefix(p.s[p.i:], lit) {
				p.i += len(lit)
				b.WriteString(lit)
				return nil
			}
		}
		return p.fail("unexpected character")
	}
}

type jsMember struct{ key, val string } // key: the JSON string literal as written out

func (p *jsParser) object(b *strings.Builder) error {
	p.i++ // {
	var members []jsMember
	index := map[string]int{}
	p.space()
	if p.i < len(p.s) && p.s[p.i] == '}' {
		p.i++
		b.WriteString("{}")
		return nil
	}
	for {
		p.space()
		if p.i >= len(p.s) || p.s[p.i] != '"' {
			return p.fail("expected a key")
		}
		var kb strings.Builder
		if err := p.str(&kb); err != nil {
			return err
		}
		p.space()
		if p.i >= len(p.s) || p.s[p.i] != ':' {
			return p.fail("expected ':'")
		}
		p.i++
		p.space()
		var vb strings.Builder
		if err := p.value(&vb); err != nil {
			return err
		}
		k := kb.String()
		if at, ok := index[k]; ok {
			members[at].val = vb.String()
		} else {
			index[k] = len(members)
			members = append(members, jsMember{k, vb.String()})
		}
		if more, err := p.next('}'); err != nil || !more {
			if err != nil {
				return err
			}
			break
		}
	}
	// Array-index keys first, in numeric order; the rest keep their order.
	sort.SliceStable(members, func(a, c int) bool {
		ia, oka := arrayIndex(members[a].key)
		ic, okc := arrayIndex(members[c].key)
		switch {
		case oka && okc:
			return ia < ic
		default:
			return oka && !okc
		}
	})
	b.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(m.key)
		b.WriteByte(':')
		b.WriteString(m.val)
	}
	b.WriteByte('}')
	return nil
}

// arrayIndex reports whether the quoted key is a canonical array index
// (0 to 2^32-2, no leading zero).
func arrayIndex(quoted string) (uint64, bool) {
	k := quoted[1 : len(quoted)-1]
	if k == "" || len(k) > 10 || (len(k) > 1 && k[0] == '0') {
		return 0, false
	}
	for i := 0; i < len(k); i++ {
		if k[i] < '0' || k[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseUint(k, 10, 64)
	if err != nil || n > math.MaxUint32-1 {
		return 0, false
	}
	return n, true
}

func (p *jsParser) array(b *strings.Builder) error {
	p.i++ // [
	b.WriteByte('[')
	p.space()
	if p.i < len(p.s) && p.s[p.i] == ']' {
		p.i++
		b.WriteByte(']')
		return nil
	}
	for n := 0; ; n++ {
		if n > 0 {
			b.WriteByte(',')
		}
		p.space()
		if err := p.value(b); err != nil {
			return err
		}
		if more, err := p.next(']'); err != nil || !more {
			b.WriteByte(']')
			return err
		}
	}
}

// next reads what follows a member or element: a comma (more follow) or
// the closing bracket.
func (p *jsParser) next(closing byte) (more bool, err error) {
	p.space()
	switch {
	case p.i >= len(p.s):
		return false, p.fail("unexpected end")
	case p.s[p.i] == ',':
		p.i++
		return true, nil
	case p.s[p.i] != closing:
		return false, p.fail(fmt.Sprintf("expected ',' or '%c'", closing))
	}
	p.i++
	return false, nil
}

func (p *jsParser) number(b *strings.Builder) error {
	start := p.i
	if p.s[p.i] == '-' {
		p.i++
	}
	digits := func() int {
		n := 0
		for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	intStart := p.i
	if digits() == 0 {
		return p.fail("bad number")
	}
	if p.s[intStart] == '0' && p.i-intStart > 1 {
		return p.fail("leading zero")
	}
	if p.i < len(p.s) && p.s[p.i] == '.' {
		p.i++
		if digits() == 0 {
			return p.fail("bad number")
		}
	}
	if p.i < len(p.s) && (p.s[p.i] == 'e' || p.s[p.i] == 'E') {
		p.i++
		if p.i < len(p.s) && (p.s[p.i] == '+' || p.s[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			return p.fail("bad number")
		}
	}
	f, err := strconv.ParseFloat(p.s[start:p.i], 64)
	var ne *strconv.NumError
	if err != nil && !(errors.As(err, &ne) && ne.Err == strconv.ErrRange) {
		return p.fail("bad number")
	}
	b.WriteString(JSNumber(f)) // out of range: ±Inf (null) or 0, as JavaScript reads it
	return nil
}

// str reads a string literal and writes it as JSON.stringify would.
func (p *jsParser) str(b *strings.Builder) error {
	p.i++ // opening quote
	b.WriteByte('"')
	for {
		if p.i >= len(p.s) {
			return p.fail("unterminated string")
		}
		c := p.s[p.i]
		switch {
		case c == '"':
			p.i++
			b.WriteByte('"')
			return nil
		case c < 0x20:
			return p.fail("control character in string")
		case c == '\\':
			r, err := p.escape()
			if err != nil {
				return err
			}
			if utf16.IsSurrogate(r) && r < 0xDC00 && strings.HasPrefix(p.s[p.i:], `\u`) {
				save := p.i
				if r2, err := p.escape(); err == nil && r2 >= 0xDC00 && r2 <= 0xDFFF {
					writeJSRune(b, utf16.DecodeRune(r, r2))
					continue
				}
				p.i = save
			}
			writeJSRune(b, r)
		case c < utf8.RuneSelf:
			p.i++
			writeJSRune(b, rune(c))
		default:
			r, n := utf8.DecodeRuneInString(p.s[p.i:])
			p.i += n
			writeJSRune(b, r) // RuneError for bytes that are not UTF-8
		}
	}
}

// escape reads one backslash escape; \uXXXX may yield a lone surrogate.
func (p *jsParser) escape() (rune, error) {
	if p.i+1 >= len(p.s) {
		return 0, p.fail("unterminated escape")
	}
	c := p.s[p.i+1]
	p.i += 2
	switch c {
	case '"', '\\', '/':
		return rune(c), nil
	case 'b':
		return '\b', nil
	case 'f':
		return '\f', nil
	case 'n':
		return '\n', nil
	case 'r':
		return '\r', nil
	case 't':
		return '\t', nil
	case 'u':
		if p.i+4 > len(p.s) {
			return 0, p.fail("short \\u escape")
		}
		v, err := strconv.ParseUint(p.s[p.i:p.i+4], 16, 32)
		if err != nil {
			return 0, p.fail("bad \\u escape")
		}
		p.i += 4
		return rune(v), nil
	}
	return 0, p.fail("bad escape")
}
