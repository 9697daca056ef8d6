//go:build unix

package archive

import (
	"os"
	"strconv"
	"syscall"
)

func fileNumber(st os.FileInfo) (string, bool) {
	s, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return "", false
	}
	return strconv.FormatUint(uint64(s.Ino), 10), true
}
