package archive

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestReadSizedReadsTheWholeFileWhateverTheSizeSaid: the read that skips
// the final 0-byte read when the first returns exactly fstat's size still
// reads every byte when the size was wrong (the file grew or shrank after
// fstat) or when the descriptor hands its bytes out in short reads.
func TestReadSizedReadsTheWholeFileWhateverTheSizeSaid(t *testing.T) {
	body := bytes.Repeat([]byte(`{"k":"v"}`), 700) // 6,300 bytes
	path := filepath.Join(t.TempDir(), "obj")
	if err := os.WriteFile(path, body, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		size int64
		buf  []byte
	}{
		{"size right", int64(len(body)), nil},
		{"size right, buffer large enough", int64(len(body)), make([]byte, 0, 64<<10)},
		{"grew after fstat", 100, nil},
		{"shrank after fstat", int64(len(body)) + 500, nil},
		{"size zero but bytes there", 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer syscall.Close(fd)
			got, err := readSized(fdReader{fd: fd, l: &Local{root: "/"}, key: "obj"}, tc.buf, tc.size)
			if err != nil || !bytes.Equal(got, body) {
				t.Fatalf("read %d bytes (%v), want the %d of the file", len(got), err, len(body))
			}
		})
	}

	t.Run("short reads", func(t *testing.T) {
		var p [2]int
		if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
		defer syscall.Close(p[0])
		go func() {
			defer syscall.Close(p[1])
			for rest := body; len(rest) > 0; {
				n := min(1000, len(rest))
				syscall.Write(p[1], rest[:n])
				rest = rest[n:]
				time.Sleep(time.Millisecond)
			}
		}()
		got, err := readSized(fdReader{fd: p[0], l: &Local{root: "/"}, key: "pipe"}, nil, int64(len(body)))
		if err != nil || !bytes.Equal(got, body) {
			t.Fatalf("read %d bytes (%v) in short reads, want %d", len(got), err, len(body))
		}
	})
}
