package selection

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
)

// Spool holds a list of keys on disk, so that a long selection need not sit
// in memory between a plan and its run. Each key is framed by its length,
// so a key may hold any byte (a newline, a NUL) and can never be read back
// as two keys. The file is unlinked as soon as it is created (where the
// system allows), so it cannot outlive the process, even one killed.
type Spool struct {
	f     *os.File
	w     *bufio.Writer
	name  string // still to remove on Close where unlinking an open file failed
	count int
}

// NewSpool creates an empty spool in the temporary directory.
func NewSpool() (*Spool, error) {
	f, err := os.CreateTemp("", "dla-keys-*")
	if err != nil {
		return nil, fmt.Errorf("creating the key spool: %w", err)
	}
	s := &Spool{f: f, w: bufio.NewWriterSize(f, 64<<10)}
	if os.Remove(f.Name()) != nil {
		s.name = f.Name()
	}
	return s, nil
}

// Add appends a key.
func (s *Spool) Add(key string) error {
	var n [binary.MaxVarintLen64]byte
	if _, err := s.w.Write(n[:binary.PutUvarint(n[:], uint64(len(key)))]); err != nil {
		return fmt.Errorf("spooling keys: %w", err)
	}
	if _, err := s.w.WriteString(key); err != nil {
		return fmt.Errorf("spooling keys: %w", err)
	}
	s.count++
	return nil
}

// Len is the number of keys added.
func (s *Spool) Len() int { return s.count }

// Keys yields the keys in the order they were added (it may be called once,
// after the last Add).
func (s *Spool) Keys(yield func(string) error) error {
	if err := s.w.Flush(); err != nil {
		return fmt.Errorf("spooling keys: %w", err)
	}
	if _, err := s.f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("reading the key spool: %w", err)
	}
	r := bufio.NewReaderSize(s.f, 64<<10)
	var buf []byte
	for read := 0; read < s.count; read++ {
		n, err := binary.ReadUvarint(r)
		if err == nil && n > 1<<20 {
			err = errors.New("a key longer than 1 MiB")
		}
		if err == nil {
			if cap(buf) < int(n) {
				buf = make([]byte, n)
			}
			buf = buf[:n]
			_, err = io.ReadFull(r, buf)
		}
		if err != nil {
			return fmt.Errorf("reading the key spool (key %d of %d): %w", read+1, s.count, err)
		}
		if err := yield(string(buf)); err != nil {
			return err
		}
	}
	return nil
}

// Close closes (and, where it could not be unlinked at once, removes) the
// spool.
func (s *Spool) Close() error {
	err := s.f.Close()
	if s.name != "" {
		os.Remove(s.name)
	}
	return err
}
