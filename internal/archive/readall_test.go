package archive

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

// countingReader counts the bytes handed out.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

func TestReadAllStopsAtTheLimit(t *testing.T) {
	SetMaxObjectSize(t, 1000)
	body := func(n int) []byte { return bytes.Repeat([]byte("x"), n) }
	for _, tc := range []struct {
		name string
		r    io.Reader
		size int64 // announced
		buf  []byte
	}{
		{"length unknown", bytes.NewReader(body(100 << 10)), 0, nil},
		{"length understated", bytes.NewReader(body(100 << 10)), 10, nil},
		{"a byte at a time", iotest.OneByteReader(bytes.NewReader(body(1001))), 0, nil},
		{"into a reused buffer larger than the limit", bytes.NewReader(body(100 << 10)), 0, make([]byte, 0, 64<<10)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cr := &countingReader{r: tc.r}
			b, err := readAll(cr, tc.buf, tc.size)
			if !errors.Is(err, ErrTooLarge) {
				t.Fatalf("read %d bytes, err %v; want ErrTooLarge", len(b), err)
			}
			if lim := max(1001, cap(tc.buf)); cr.n > lim || cap(b) > lim {
				t.Errorf("read %d bytes into %d of room past a 1000-byte limit", cr.n, cap(b))
			}
		})
	}

	t.Run("announced over the limit: nothing read", func(t *testing.T) {
		cr := &countingReader{r: bytes.NewReader(body(2000))}
		if _, err := readAll(cr, nil, 2000); !errors.Is(err, ErrTooLarge) || cr.n != 0 {
			t.Errorf("err %v after %d bytes; want ErrTooLarge before any", err, cr.n)
		}
	})

	for _, n := range []int{0, 1, 999, 1000} {
		for _, size := range []int64{0, int64(n)} {
			b, err := readAll(iotest.HalfReader(bytes.NewReader(body(n))), nil, size)
			if err != nil || !bytes.Equal(b, body(n)) {
				t.Errorf("%d bytes (announced %d): got %d, %v", n, size, len(b), err)
			}
		}
	}
	if _, err := readAll(iotest.ErrReader(io.ErrUnexpectedEOF), nil, 0); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("a failing reader: %v", err)
	}
}
