package dlacmd

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/deadletter/deadletter/internal/cli/cmdutil"
	"github.com/deadletter/deadletter/internal/selection"
)

// addNullFlag adds -0/--null to a command that reads keys from stdin.
func addNullFlag(cmd *cobra.Command, null *bool) {
	cmd.Flags().BoolVarP(null, "null", "0", false,
		"keys on stdin ('-') end with a NUL byte, not a newline, so a key may hold any other byte (as from 'dla search -o keys -0', find -print0)")
}

// readKeys expands "-" into the keys on stdin. One per line by default
// (blank lines and #comments skipped, spaces trimmed, for keys typed by
// hand); with null, NUL-terminated and taken exactly as they are.
func readKeys(in io.Reader, args []string, null bool) ([]string, error) {
	var keys []string
	for _, a := range args {
		if a != "-" {
			keys = append(keys, a)
			continue
		}
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 64*1024), 1<<20)
		if null {
			sc.Split(splitNUL)
		}
		for sc.Scan() {
			if null {
				if sc.Text() != "" {
					keys = append(keys, sc.Text())
				}
				continue
			}
			if line := strings.TrimSpace(sc.Text()); line != "" && !strings.HasPrefix(line, "#") {
				keys = append(keys, line)
			}
		}
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("reading keys from stdin: %w", err)
		}
	}
	if len(keys) == 0 {
		return nil, cmdutil.UsageErrorf("no keys given (stdin was empty)")
	}
	return keys, nil
}

// splitNUL is a bufio.SplitFunc for NUL-terminated items.
func splitNUL(data []byte, atEOF bool) (int, []byte, error) {
	if i := bytes.IndexByte(data, 0); i >= 0 {
		return i + 1, data[:i], nil
	}
	if atEOF && len(data) > 0 {
		return len(data), data, nil
	}
	return 0, nil, nil
}

// lineSafeKey reports whether key reads back as itself when printed one per
// line and read by readKeys: no line break, no space at either end, no
// leading '#', valid UTF-8 (a terminal or a pipe may mangle the rest).
func lineSafeKey(key string) bool {
	if key == "" || strings.ContainsAny(key, "\n\r\x00") || strings.HasPrefix(key, "#") || !utf8.ValidString(key) {
		return false
	}
	first, _ := utf8.DecodeRuneInString(key)
	last, _ := utf8.DecodeLastRuneInString(key)
	return !unicode.IsSpace(first) && !unicode.IsSpace(last)
}

// keyUsage makes a key the archive cannot take a usage error (exit 2).
func keyUsage(err error) error {
	var ke *selection.KeyError
	if errors.As(err, &ke) {
		return &cmdutil.ExitError{Code: cmdutil.ExitUsage, Err: err}
	}
	return err
}
