package archive

import (
	"os"
	"path/filepath"
)

// Identity names the archive itself rather than the way to it, for the
// recover lock: s3://bucket/stack in S3; for a local archive, the stack and
// the file number of its dead-letter-archive folder where the system has
// one, so that one archive reached by two paths (a bind mount, a share
// mounted at two places) is one archive. Two archives that share a stack
// name and, by chance, a file number on two file systems are then taken for
// one: a run is refused that could have gone on, never the reverse.
func (l Location) Identity() string {
	if l.Bucket != "" {
		return l.String()
	}
	if st, err := os.Stat(filepath.Join(l.Dir, l.Stack, "dead-letter-archive")); err == nil {
		if ino, ok := fileNumber(st); ok {
			return "local:" + l.Stack + ":" + ino
		}
	}
	return l.String()
}
