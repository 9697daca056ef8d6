package dla

import "github.com/deadletter/deadletter/internal/dla/jsontext"

// The nesting bound, as `dla show` (internal/cli/dlacmd) still names it:
// the depth check is jsontext's, and these forward to it until show's
// printer imports jsontext itself.

// MaxDepth is jsontext.MaxDepth, the nesting bound of every JSON text the
// tools parse.
const MaxDepth = jsontext.MaxDepth

// TooDeep is jsontext.TooDeep: whether the JSON text s nests deeper than
// MaxDepth.
func TooDeep(s string) bool { return jsontext.TooDeep(s) }

// ValidJSON is jsontext.Valid: gjson.Valid for text that may nest
// arbitrarily deep.
func ValidJSON(s string) bool { return jsontext.Valid(s) }

// IndentedSize is jsontext.IndentedSize: a bound of the size of s
// pretty-printed.
func IndentedSize(s string, prefix, indent int) int64 {
	return jsontext.IndentedSize(s, prefix, indent)
}
