package jsontext

import (
	"bytes"
	"strings"

	"github.com/tidwall/gjson"
)

// MaxDepth bounds how deeply arrays and objects may nest in any JSON text
// the tools parse: the decoder's layers (and the JSON strings inside them),
// what `dla show` pretty-prints, what recover reads from S3. The validators
// and printers the tools use recurse once per level, so an object nested
// millions of levels deep would overflow the stack (a fatal error no
// recover() can catch), and indenting it costs the square of its depth.
// Cumulus messages nest about 15 levels; the bound leaves room for any
// payload.
const MaxDepth = 512

// DepthReason says why a text nested deeper than MaxDepth is not read (a
// test checks that it names MaxDepth).
const DepthReason = "nested deeper than 512 levels"

// TooDeep reports whether the JSON text s nests arrays and objects more
// than MaxDepth levels deep (brackets inside strings do not count). It
// reads s at most twice, in constant memory, and never fails: text that is
// not valid JSON is left to the validator.
func TooDeep(s string) bool {
	// Nesting needs an opening bracket per level: text with few of them
	// (every object Cumulus writes) needs no closer look. Counting one byte
	// is vectorised, many times faster than the scan.
	if strings.Count(s, "{")+strings.Count(s, "[") <= MaxDepth {
		return false
	}
	return deeperThan(s, MaxDepth)
}

// TooDeepBytes is TooDeep for bytes.
func TooDeepBytes(b []byte) bool {
	if bytes.Count(b, []byte("{"))+bytes.Count(b, []byte("[")) <= MaxDepth {
		return false
	}
	return deeperThan(b, MaxDepth)
}

// deeperThan scans s once and stops at the first bracket deeper than max.
func deeperThan[T string | []byte](s T, max int) bool {
	deeper, _, _ := scanNesting(s, max)
	return deeper
}

// scanNesting walks the brackets and commas of s outside strings (an
// escaped quote does not end one). It stops at the first bracket deeper
// than limit (never when limit is negative), and returns whether it did,
// how many brackets and commas it met, and the sum of their depths.
func scanNesting[T string | []byte](s T, limit int) (deeper bool, marks, depthSum int64) {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"':
			for i++; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' {
					i++
				}
			}
		case '[', '{':
			if depth++; limit >= 0 && depth > limit {
				return true, marks, depthSum
			}
			marks++
			depthSum += int64(depth)
		case ',':
			marks++
			depthSum += int64(depth)
		case ']', '}':
			depth--
			marks++
			depthSum += int64(max(depth, 0))
		}
	}
	return false, marks, depthSum
}

// IndentedSize bounds the size of the JSON text s pretty-printed with one
// value per line, each line starting with prefix bytes and indent bytes per
// level, but for the first line's prefix and the final newline (prefix+1
// bytes: all a bare number or string is printed with). Indenting
// multiplies a text by its depth: a printer should check this before it
// indents text it did not write.
func IndentedSize(s string, prefix, indent int) int64 {
	_, marks, depthSum := scanNesting(s, -1)
	return int64(len(s)) + 2*marks*int64(prefix+1) + 2*depthSum*int64(indent)
}

// Valid is gjson.Valid for text that may be nested arbitrarily deep:
// false when s nests deeper than MaxDepth, without recursing.
func Valid(s string) bool { return !TooDeep(s) && gjson.Valid(s) }

// ValidBytes is Valid for bytes.
func ValidBytes(b []byte) bool { return !TooDeepBytes(b) && gjson.ValidBytes(b) }
