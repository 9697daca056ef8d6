//go:build !linux

package sqsmove

import "os"

// dataSync makes what was appended to the journal durable (fsync: the
// fdatasync of journalsync_linux.go is not everywhere, and macOS's Sync is
// F_FULLFSYNC).
func dataSync(f *os.File) error { return f.Sync() }
