// Package shellword quotes words for bash and zsh, so that a command the
// tools print (in a warning, a triage line, a report page) runs as shown
// whatever bytes a key or a folder holds, and splits such a command back
// into its words (what a shell does with it; the tests run what was
// printed).
package shellword

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Quote quotes s for bash or zsh when it needs it: in single quotes,
// or, when s holds a control character, a character that reorders or
// breaks a line on a terminal (bidi controls, U+2028, U+2029) or bytes
// that are not UTF-8, as $'...' with those bytes written \xNN, so that the
// command as shown (and copied from a page or a terminal, where such
// characters would be escaped or would rearrange the line) names s
// exactly. A word starting with '=' is quoted too (zsh expands =cmd to
// its path). A NUL cannot be in an argument at all: bash ends the word
// there, so no caller may pass one (dla.ErrorClass masks it).
func Quote(s string) string {
	if strings.IndexFunc(s, isControl) >= 0 {
		var b strings.Builder
		b.WriteString("$'")
		for i := 0; i < len(s); {
			r, size := utf8.DecodeRuneInString(s[i:])
			switch {
			case isControl(r):
				for _, c := range []byte(s[i : i+size]) {
					fmt.Fprintf(&b, `\x%02x`, c)
				}
			case r == '\\' || r == '\'':
				b.WriteByte('\\')
				b.WriteRune(r)
			default:
				b.WriteString(s[i : i+size])
			}
			i += size
		}
		b.WriteByte('\'')
		return b.String()
	}
	if s != "" && s[0] != '=' && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '/' || r == '-' || r == '_' || r == '.' || r == ':' || r == '=' || r == '+' || r == ',' || r == '@' ||
			(r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9'))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// isControl: a C0 or C1 control character, DEL, a bidi control, a line or
// paragraph separator, or a byte that is not UTF-8 (decoded as
// utf8.RuneError).
func isControl(r rune) bool {
	return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == utf8.RuneError ||
		(r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) || r == 0x200e || r == 0x200f || r == 0x061c ||
		r == 0x2028 || r == 0x2029
}

// Join quotes each word and joins them with spaces.
func Join(words ...string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = Quote(w)
	}
	return strings.Join(q, " ")
}

// Split splits a command line into words as bash does with the quoting
// Quote writes and an operator types: blanks separate words; '…' is
// literal; "…" is literal but for \ \" \$ and \`; $'…' knows \xNN, \n, \t,
// \\ and \'; a backslash outside quotes escapes the next byte. It does not
// expand variables, globs or substitutions: those are refused.
func Split(line string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(line); {
		c := line[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
			i++
		case c == '\'':
			end := strings.IndexByte(line[i+1:], '\'')
			if end < 0 {
				return nil, fmt.Errorf("unterminated single quote at byte %d", i)
			}
			cur.WriteString(line[i+1 : i+1+end])
			inWord = true
			i += end + 2
		case c == '$' && i+1 < len(line) && line[i+1] == '\'':
			j := i + 2
			for ; j < len(line) && line[j] != '\''; j++ {
				if line[j] != '\\' || j+1 >= len(line) {
					cur.WriteByte(line[j])
					continue
				}
				j++
				switch line[j] {
				case 'x':
					var b byte
					n := 0
					for ; n < 2 && j+1 < len(line) && isHex(line[j+1]); n++ {
						j++
						b = b<<4 | unhex(line[j])
					}
					if n == 0 {
						return nil, fmt.Errorf("\\x without hex digits at byte %d", j)
					}
					cur.WriteByte(b)
				case 'n':
					cur.WriteByte('\n')
				case 't':
					cur.WriteByte('\t')
				case 'r':
					cur.WriteByte('\r')
				default:
					cur.WriteByte(line[j])
				}
			}
			if j >= len(line) {
				return nil, fmt.Errorf("unterminated $' quote at byte %d", i)
			}
			inWord = true
			i = j + 1
		case c == '"':
			j := i + 1
			for ; j < len(line) && line[j] != '"'; j++ {
				switch {
				case line[j] == '\\' && j+1 < len(line) && strings.IndexByte("\\\"$`", line[j+1]) >= 0:
					j++
					cur.WriteByte(line[j])
				case line[j] == '$' || line[j] == '`':
					return nil, fmt.Errorf("an expansion inside double quotes at byte %d", j)
				default:
					cur.WriteByte(line[j])
				}
			}
			if j >= len(line) {
				return nil, fmt.Errorf("unterminated double quote at byte %d", i)
			}
			inWord = true
			i = j + 1
		case c == '\\':
			if i+1 < len(line) {
				cur.WriteByte(line[i+1])
			}
			inWord = true
			i += 2
		case strings.IndexByte("$`;|&<>()*?[", c) >= 0:
			return nil, fmt.Errorf("%q at byte %d: shell syntax this splitter does not run", c, i)
		default:
			cur.WriteByte(c)
			inWord = true
			i++
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func unhex(c byte) byte {
	switch {
	case c >= 'a':
		return c - 'a' + 10
	case c >= 'A':
		return c - 'A' + 10
	}
	return c - '0'
}
