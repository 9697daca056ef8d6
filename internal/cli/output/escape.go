package output

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/deadletter/deadletter/internal/cli/iostreams"
)

// Escape makes text that came from the archive or a queue safe to show on a
// terminal: C0 control characters (other than tab and newline), DEL and
// bytes that are not UTF-8 become \xNN, and C1 control characters (U+0080
// to U+009F, which terminals may read as ESC [ and the like) become \u00NN.
// An error text holding "\x1b]0;title\x07" or "\x1b[2J" can then neither
// retitle the window nor clear the screen. Text without such characters is
// returned as it is.
func Escape(s string) string {
	i := firstUnsafe(s)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\t' || r == '\n':
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case (r >= 0x80 && r <= 0x9f) || isBidiControl(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// firstUnsafe is the index of the first byte Escape changes, or -1.
func firstUnsafe(s string) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if (c < 0x20 && c != '\t' && c != '\n') || c == 0x7f {
				return i
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size <= 1) || (r >= 0x80 && r <= 0x9f) || isBidiControl(r) {
			return i
		}
		i += size
	}
	return -1
}

// EscapeFor returns Escape when the stream is a terminal, and the identity
// otherwise: piped output stays byte-exact.
func EscapeFor(tty bool) func(string) string {
	if tty {
		return Escape
	}
	return func(s string) string { return s }
}

// TerminalOut is the streams' stdout for text built from archive or queue
// values: on a terminal every write is escaped (see Escape), piped it is
// stdout itself. Each write is escaped on its own, so write whole lines.
func TerminalOut(s *iostreams.IOStreams) io.Writer {
	if !s.IsStdoutTTY() {
		return s.Out
	}
	return escapingWriter{s.Out}
}

type escapingWriter struct{ w io.Writer }

func (e escapingWriter) Write(p []byte) (int, error) {
	if firstUnsafe(string(p)) < 0 {
		return e.w.Write(p)
	}
	if _, err := io.WriteString(e.w, Escape(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// JSONOut is the streams' stdout for JSON built from archive or queue
// values. encoding/json escapes C0 control characters but writes C1 ones
// (U+0080 to U+009F, such as U+009B, CSI) and DEL as they are; on a
// terminal this writer turns them into the JSON escapes \u0080 to \u009f
// and \u007f, which decode to the same strings. Piped, it is stdout itself
// and the output stays byte-exact.
func JSONOut(s *iostreams.IOStreams) io.Writer {
	if !s.IsStdoutTTY() {
		return s.Out
	}
	return &jsonTerminalWriter{w: s.Out}
}

// jsonTerminalWriter escapes C1 controls, DEL and the bidirectional
// controls in UTF-8 JSON as \uXXXX (the same strings once decoded). A rune
// split across writes is kept back until its last byte comes. (Valid UTF-8,
// which encoding/json writes, never ends in the middle of a rune, so
// nothing is kept back at the end of a document.)
type jsonTerminalWriter struct {
	w       io.Writer
	pending []byte // the start of a rune kept back from the last write
}

func (j *jsonTerminalWriter) Write(p []byte) (int, error) {
	data := p
	if len(j.pending) > 0 {
		data = append(j.pending, p...)
		j.pending = nil
	}
	cut := len(data)
	for k := 1; k <= utf8.UTFMax && k <= len(data); k++ {
		if utf8.RuneStart(data[len(data)-k]) {
			if !utf8.FullRune(data[len(data)-k:]) {
				cut = len(data) - k
			}
			break
		}
	}
	j.pending = append([]byte(nil), data[cut:]...)
	data = data[:cut]
	if bytes.IndexFunc(data, func(r rune) bool { return r >= 0x7f }) < 0 {
		if _, err := j.w.Write(data); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	out := make([]byte, 0, len(data)+16)
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		if r == 0x7f || (r >= 0x80 && r <= 0x9f) || isBidiControl(r) {
			out = fmt.Appendf(out, `\u%04x`, r)
		} else {
			out = append(out, data[i:i+size]...)
		}
		i += size
	}
	if _, err := j.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// isBidiControl: the Unicode bidirectional overrides and isolates, which
// make a terminal show text in an order other than the bytes' (a key that
// reads as "…/sqs/2024-03-01/x" while holding something else).
func isBidiControl(r rune) bool {
	return (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) || r == 0x200e || r == 0x200f || r == 0x061c
}

// lineBreaks escapes what Escape keeps: line breaks and tabs.
var lineBreaks = strings.NewReplacer("\n", `\n`, "\t", `\t`)

// OneLine is Escape with the line breaks and tabs escaped too: a value
// printed inside one line of a message or a table row (a key, a folder, an
// error class) cannot start a line or a column of its own.
func OneLine(s string) string { return lineBreaks.Replace(Escape(s)) }
