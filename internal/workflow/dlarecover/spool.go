package dlarecover

import (
	"bufio"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/dla"
)

// ObjectSpool keeps what the plan pass read of each selected object, on
// disk, so that the write pass neither fetches nor decodes it again while
// memory stays flat. It holds what the write needs of a decoded object
// (recovery.Unwrap's inputs, the execution, status and event time); an
// object the plan could not read or decode whole is marked to be fetched
// again, so it meets exactly the checks it met before. The file is
// unlinked as soon as it is created (where the system allows).
type ObjectSpool struct {
	f     *os.File
	w     *bufio.Writer
	enc   *gob.Encoder
	name  string // still to remove on Close where unlinking an open file failed
	count int
}

// spooled is one object of an ObjectSpool.
type spooled struct {
	Key     string
	Refetch bool // read or decode failed in the plan: fetch it again
	// Read: the plan read its bytes (a decode failed, not the read), so
	// a re-fetch that finds it gone finds it moved or deleted since.
	Read bool
	ExecutionArn, Status, Time,
	MessageSource, Message, Detail string
	Problems  []string
	Granules  []string // the granule ids the object names (the audit record's items)
	Digest    [16]byte // the MD5 of the bytes the plan read (HasDigest)
	HasDigest bool
}

// NewObjectSpool creates an empty spool in the temporary directory.
func NewObjectSpool() (*ObjectSpool, error) {
	f, err := os.CreateTemp("", "dla-objects-*")
	if err != nil {
		return nil, fmt.Errorf("creating the object spool: %w", err)
	}
	s := &ObjectSpool{f: f, w: bufio.NewWriterSize(f, 256<<10)}
	s.enc = gob.NewEncoder(s.w)
	if os.Remove(f.Name()) != nil {
		s.name = f.Name()
	}
	return s, nil
}

// Add appends an object as the plan read it: d and err as the selection
// gave them.
func (s *ObjectSpool) Add(key string, d *dla.Decoded, err error) error {
	o := spooled{Key: key, Refetch: err != nil || d == nil, Read: err == nil || dla.IsDecodeError(err)}
	if !o.Refetch {
		o.ExecutionArn, o.Status, o.Time, o.Problems, o.Granules = d.ExecutionArn, d.Status, d.Time, d.Problems, d.Granules
		o.MessageSource, o.Message, o.Detail = d.MessageSource, d.Message, unwrapDetail(d.Detail)
		o.Digest, o.HasDigest = d.Digest, d.HasDigest
	}
	if err := s.enc.Encode(&o); err != nil {
		return fmt.Errorf("spooling objects: %w", err)
	}
	s.count++
	return nil
}

// unwrapDetail is the part of a Step Functions detail recovery.Unwrap
// reads (status, whether input holds a value, stopDate), as a small
// object that reads the same: the detail itself holds the message again.
func unwrapDetail(detail string) string {
	if detail == "" {
		return ""
	}
	g := gjson.Parse(detail)
	out := []byte("{")
	add := func(name, raw string) {
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, '"')
		out = append(out, name...)
		out = append(out, '"', ':')
		out = append(out, raw...)
	}
	if v := g.Get("status"); v.Exists() {
		add("status", v.Raw)
	}
	if v := g.Get("input"); v.Exists() && v.Type != gjson.Null {
		add("input", "0")
	}
	if v := g.Get("stopDate"); v.Exists() {
		add("stopDate", v.Raw)
	}
	return string(append(out, '}'))
}

// Len is the number of objects added.
func (s *ObjectSpool) Len() int { return s.count }

// Replay yields the objects in the order they were added (it may be called
// once, after the last Add): d is nil for an object to fetch again.
func (s *ObjectSpool) Replay(ctx context.Context, yield func(key string, d *dla.Decoded) error) error {
	return s.replay(ctx, func(key string, d *dla.Decoded, _ bool) error { return yield(key, d) })
}

// replay is Replay, telling for each object whether the plan read its
// bytes (read: a decode failed, not the read itself).
func (s *ObjectSpool) replay(ctx context.Context, yield func(key string, d *dla.Decoded, read bool) error) error {
	if err := s.w.Flush(); err != nil {
		return fmt.Errorf("spooling objects: %w", err)
	}
	if _, err := s.f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("reading the object spool: %w", err)
	}
	dec := gob.NewDecoder(bufio.NewReaderSize(s.f, 256<<10))
	for range s.count {
		if err := ctx.Err(); err != nil {
			return err
		}
		var o spooled
		if err := dec.Decode(&o); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return fmt.Errorf("reading the object spool: %w", err)
		}
		var d *dla.Decoded
		if !o.Refetch {
			d = &dla.Decoded{Record: dla.Record{Key: o.Key, ExecutionArn: o.ExecutionArn, Status: o.Status, Time: o.Time, Problems: o.Problems, Granules: o.Granules},
				MessageSource: o.MessageSource, Message: o.Message, Detail: o.Detail, Digest: o.Digest, HasDigest: o.HasDigest}
		}
		if err := yield(o.Key, d, o.Read); err != nil {
			return err
		}
	}
	return nil
}

// Close removes the spool.
func (s *ObjectSpool) Close() error {
	err := s.f.Close()
	if s.name != "" {
		os.Remove(s.name)
	}
	return err
}
