// Package archive is the adapter to where archive objects live: one Store
// interface, with an S3 implementation and a local directory that mirrors a
// bucket's layout.
package archive

import (
	"context"
	"errors"
	"io"
	"time"
)

// ErrNotFound is returned (wrapped) when a key does not exist.
var ErrNotFound = errors.New("no such key")

// Entry is one listed item: an object, or, in a delimited listing, a folder
// (a common prefix ending in "/"). A local listing leaves Size and
// LastModified zero (a stat per object would cost a sixth of a scan); Stat
// gives them.
type Entry struct {
	Key          string
	Size         int64
	LastModified time.Time
	IsPrefix     bool
	Origin       string // from Stat: the origin PutNew recorded, if the store keeps one
}

// Store holds archive objects under keys, like an S3 bucket.
type Store interface {
	// List calls fn for every object whose key starts with prefix, in key
	// order, fetching page by page so memory stays flat. When delimited, keys
	// with a further "/" after the prefix are reported once, as folders.
	List(ctx context.Context, prefix string, delimited bool, fn func(Entry) error) error
	Get(ctx context.Context, key string) ([]byte, error)
	// GetInto is Get reading into buf (reused when large enough), so that a
	// scan over many objects does not allocate for each one.
	GetInto(ctx context.Context, key string, buf []byte) ([]byte, error)
	// Stat returns one object's size and last-modified time.
	Stat(ctx context.Context, key string) (Entry, error)
	Put(ctx context.Context, key string, body []byte) error
	// PutNew stores body at key only when key does not exist yet: it never
	// replaces an object (ErrExists then). origin names where the bytes
	// came from; a store that can keep it (S3, as object metadata) returns
	// it from Stat, so that a retried move can tell its own earlier copy
	// from another object that holds the same bytes.
	PutNew(ctx context.Context, key string, body []byte, origin string) error
	Delete(ctx context.Context, key string) error
	// DeleteMany deletes keys and returns the keys it could not delete, with
	// why. A non-nil error means the call itself failed (nothing is known).
	DeleteMany(ctx context.Context, keys []string) (failed map[string]error, err error)
	// String names the store for people: s3://bucket or a directory path.
	String() string
}

// ConcurrentLister is a Store whose listings are round trips worth
// overlapping: Listings says how many listings of separate prefixes may run
// at once.
type ConcurrentLister interface {
	Listings() int
}

// Listings returns how many listings of separate prefixes a caller may run
// at once against s (looking through Contain): what s says as a
// ConcurrentLister, else 1 (a local directory reads a folder in
// microseconds, and whole: overlapping would only add memory).
func Listings(s Store) int {
	if c, ok := s.(*contained); ok {
		s = c.inner
	}
	if l, ok := s.(ConcurrentLister); ok {
		return max(l.Listings(), 1)
	}
	return 1
}

// LocalReads reports whether s reads its objects from a local folder (a
// read takes microseconds, not a network round trip).
func LocalReads(s Store) bool {
	if c, ok := s.(*contained); ok {
		s = c.inner
	}
	_, ok := s.(*Local)
	return ok
}

// ErrSelfCopy is returned by Move when source and destination are the same.
var ErrSelfCopy = errors.New("source and destination are the same key")

// MaxObjectSize bounds what a read takes into memory. An archive object is
// one SQS message (at most 256 KiB, or a DLA record around one); anything
// far larger is not an archive object, and is refused by name (ErrTooLarge)
// rather than read whole.
const MaxObjectSize = 64 << 20

// ErrTooLarge is returned (wrapped) for an object over MaxObjectSize.
var ErrTooLarge = errors.New("larger than the 64 MiB an archive object can be; not read")

// ErrExists is returned (wrapped) by PutNew when the key is taken.
var ErrExists = errors.New("the destination already exists")

// maxObjectSize is MaxObjectSize, a variable so that tests can lower it.
var maxObjectSize = MaxObjectSize

// readAll reads r to the end into buf, sized for the expected length (0
// when unknown). It stops with ErrTooLarge, unwrapped, once more than
// maxObjectSize bytes have arrived (or are announced), so that an object
// whose length was not known beforehand cannot fill the memory either.
func readAll(r io.Reader, buf []byte, size int64) ([]byte, error) {
	limit := maxObjectSize
	if size > int64(limit) {
		return buf[:0], ErrTooLarge
	}
	if want := int(size) + 1; cap(buf) < want { // +1 sees EOF without growing
		buf = make([]byte, 0, want)
	}
	for {
		if len(buf) == cap(buf) { // the object grew: room for more, up to one byte past the limit
			grown := make([]byte, len(buf), min(max(2*cap(buf), 512), limit+1))
			copy(grown, buf)
			buf = grown
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if len(buf) > limit {
			return buf, ErrTooLarge
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}
