//go:build !linux

package archive

import (
	"io/fs"
	"os"
)

// quickGet is linux-only; elsewhere every read takes openFile's way.
func (l *Local) quickGet(key string, buf []byte) ([]byte, bool, error) { return nil, false, nil }

// readDirTyped reads the whole folder f.
func readDirTyped(f *os.File) ([]fs.DirEntry, error) { return f.ReadDir(-1) }

// setOrigin and readOrigin: no origin is kept off Linux.
func setOrigin(*os.File, string) {}

func readOrigin(*os.File) string { return "" }

// keepDirFile keeps nothing: only quickGet (Linux) reads through a folder's
// descriptor.
func (l *Local) keepDirFile(a at, dir string, f *os.File) bool { return false }

// openDirQuick is linux-only: elsewhere a folder is checked and opened
// through its os.Root.
func (l *Local) openDirQuick(a at, dir string) *os.File { return nil }
