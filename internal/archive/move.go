package archive

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"
)

// maxMoveSuffix bounds the names Move tries: dst, dst.1 ... dst.99.
const maxMoveSuffix = 100

// Move moves src to dst without ever replacing an object: when dst is taken
// by another object it tries dst.1, dst.2 and so on. The source is deleted
// only once the object at the destination is read back and found to hold,
// byte for byte, what src holds, so a lost reply, a changed source or a
// clash of names leaves the original in place rather than losing it.
//
// The copy records its origin (a hash of src) where the store keeps one
// (S3 metadata): a destination holding src's bytes with src's origin is the
// copy of an earlier attempt whose reply was lost, and is not made twice.
// Another object that merely holds the same bytes is left alone, and the
// next name is tried (two objects in, two out). A local store keeps no
// origin; nothing there loses a reply, and a copy left by a crash between
// the copy and the delete is not reused (the re-run makes a second copy:
// a duplicate, never a loss).
//
// It returns where the object went; on an error after the copy was made,
// that copy's key and an error saying so. Moves to one destination name
// are serialised within the process.
func Move(ctx context.Context, s Store, src, dst string) (string, error) {
	return move(ctx, s, src, dst, nil, nil)
}

// MoveAs is Move with the object rewritten: body is stored at dst (or the
// next free name) in place of src's bytes, read back and compared, and only
// then is src deleted, provided it still holds srcBody (the bytes body was
// made from). A copy an earlier attempt left (src's origin, body's bytes)
// is reused; one with src's origin and other bytes is an error that keeps
// src.
func MoveAs(ctx context.Context, s Store, src, dst string, srcBody, body []byte) (string, error) {
	if body == nil {
		body = []byte{}
	}
	return move(ctx, s, src, dst, srcBody, body)
}

// ErrSourceGone: the source of a move vanished between its read and its
// delete (another run moved it): the copy made may be a second one.
var ErrSourceGone = errors.New("the source was moved or deleted by someone else meanwhile")

// ErrChanged: the object no longer holds the bytes it was read with.
var ErrChanged = errors.New("it changed since it was read")

// The conditional deletes, one name per behaviour; each deletes key only
// while its bytes are the ones read (ErrChanged otherwise):
//
//   - DeleteChecked(sum) says exactly what happened: ErrNotFound when the
//     key is gone. The store's own conditional delete, else a read, a
//     compare and a delete. For what must know (locks, staging, moves).
//   - DeleteCheckedBody(body) is DeleteChecked of the bytes' MD5.
//   - DeleteFast(sum) takes as few requests as the store allows (on S3 one
//     DeleteObject with If-Match, where the server honours it), at the
//     price that a key already gone may read as deleted when the store's
//     answer does not tell; a local folder claims the file by rename, so
//     that two runs never both count one delete. For recover's deletes of
//     what it wrote, one per object.

// DeleteCheckedBody deletes key only while it holds body (ErrChanged if
// it holds other bytes, ErrNotFound if it is gone): DeleteChecked of
// body's MD5.
func DeleteCheckedBody(ctx context.Context, s Store, key string, body []byte) error {
	return DeleteChecked(ctx, s, key, md5.Sum(body))
}

// CheckedDeleter is a Store that can delete an object only while the MD5
// of its bytes is a given one.
type CheckedDeleter interface {
	// DeleteChecked deletes key if its bytes' MD5 is sum (ErrChanged if
	// it holds other bytes, ErrNotFound if it is gone).
	DeleteChecked(ctx context.Context, key string, sum [md5.Size]byte) error
}

// FastDeleter is a Store that deletes an object only while the MD5 of
// its bytes is a given one, in one request where it can.
type FastDeleter interface {
	// DeleteFast deletes key if its bytes' MD5 is sum (ErrChanged if
	// it holds other bytes, ErrNotFound if the store said it is gone; an
	// answer that does not tell, such as a 204 to the delete of a missing
	// key, is no error).
	DeleteFast(ctx context.Context, key string, sum [md5.Size]byte) error
}

// DeleteFast deletes key only while the MD5 of its bytes is sum, as
// DeleteChecked (recover's delete of what it wrote): ErrChanged if it holds
// other bytes, ErrNotFound (wrapped) when the store answered that it was
// gone already (another run moved or deleted it), nil when it was deleted
// or when the store's answer does not tell the two apart. On S3 it is one
// conditional DeleteObject where the server honours If-Match
// (S3.DeleteFast).
func DeleteFast(ctx context.Context, s Store, key string, sum [md5.Size]byte) error {
	if r, ok := s.(FastDeleter); ok {
		return r.DeleteFast(ctx, key, sum)
	}
	return DeleteChecked(ctx, s, key, sum)
}

// DeleteChecked deletes key only while the MD5 of its bytes is sum (the
// digest of what was read earlier, when the bytes themselves are no longer
// held): the store's own conditional delete, else a read and compare just
// before the delete.
func DeleteChecked(ctx context.Context, s Store, key string, sum [md5.Size]byte) error {
	if dd, ok := s.(CheckedDeleter); ok {
		return dd.DeleteChecked(ctx, key, sum)
	}
	now, err := s.Get(ctx, key)
	if err != nil {
		return err
	}
	if md5.Sum(now) != sum {
		return fmt.Errorf("%s: %w", key, ErrChanged)
	}
	return s.Delete(ctx, key)
}

// move stores body (src's own bytes when srcBody is nil) at dst or a
// suffixed name, confirms it, and deletes src if it still holds what was
// read.
func move(ctx context.Context, s Store, src, dst string, srcBody, body []byte) (string, error) {
	if src == dst {
		return src, fmt.Errorf("move %s: %w", src, ErrSelfCopy)
	}
	unlock := moveLocks.lock(s.String() + "\x00" + dst)
	defer unlock()
	if srcBody == nil {
		var err error
		if srcBody, err = s.Get(ctx, src); err != nil {
			return "", err
		}
	} else if _, err := s.Stat(ctx, src); err != nil {
		// Gone already (another run moved it): no second copy.
		return "", err
	}
	if body == nil {
		body = srcBody
	}
	origin := Origin(src)
	for i := 0; i < maxMoveSuffix; i++ {
		cand := dst
		if i > 0 {
			cand = dst + "." + strconv.Itoa(i)
		}
		if cand == src {
			return src, fmt.Errorf("move %s: %w", src, ErrSelfCopy)
		}
		err := s.PutNew(ctx, cand, body, origin)
		if err != nil && !errors.Is(err, ErrExists) {
			return "", err
		}
		if errors.Is(err, ErrExists) {
			e, serr := s.Stat(ctx, cand)
			if errors.Is(serr, ErrNotFound) || errors.Is(serr, ErrSymlink) {
				continue // taken by a folder or a link, not an object: the next name
			}
			if serr != nil {
				return "", fmt.Errorf("%s exists but could not be looked at: %w", cand, serr)
			}
			if e.Origin != origin {
				continue // another object has that name: try the next one
			}
		}
		there, gerr := s.Get(ctx, cand)
		switch {
		case gerr != nil:
			return cand, fmt.Errorf("copied %s to %s, but could not read the copy back to confirm it (the original is kept): %w", src, cand, gerr)
		case !bytes.Equal(there, body):
			return cand, fmt.Errorf("the copy at %s does not hold the bytes meant for it from %s; the original is kept", cand, src)
		}
		if err := DeleteCheckedBody(ctx, s, src, srcBody); errors.Is(err, ErrNotFound) {
			// Moved or deleted by someone else since it was read: this copy
			// may be a second one; the caller decides.
			return cand, fmt.Errorf("copied %s to %s, but %s was gone before its delete: %w", src, cand, src, ErrSourceGone)
		} else if errors.Is(err, ErrChanged) {
			return cand, fmt.Errorf("copied %s to %s, but the original was rewritten meanwhile, so both are kept: %w", src, cand, err)
		} else if err != nil {
			return cand, fmt.Errorf("copied %s to %s, but the original could not be deleted: %w", src, cand, err)
		}
		return cand, nil
	}
	return "", fmt.Errorf("move %s: %s and %d suffixed names are all taken by other objects", src, dst, maxMoveSuffix-1)
}

// Origin is what PutNew records for a copy of key: a hash (metadata values
// must be plain ASCII; a key may hold any byte).
func Origin(key string) string {
	h := sha256.Sum256([]byte(key))
	return "sha256:" + hex.EncodeToString(h[:16])
}

// keyedMutex is a set of mutexes by name, each dropped when unused.
type keyedMutex struct {
	mu    sync.Mutex
	locks map[string]*keyedLock
}

type keyedLock struct {
	sync.Mutex
	users int
}

var moveLocks keyedMutex

func (k *keyedMutex) lock(name string) (unlock func()) {
	k.mu.Lock()
	if k.locks == nil {
		k.locks = map[string]*keyedLock{}
	}
	l := k.locks[name]
	if l == nil {
		l = &keyedLock{}
		k.locks[name] = l
	}
	l.users++
	k.mu.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		k.mu.Lock()
		if l.users--; l.users == 0 {
			delete(k.locks, name)
		}
		k.mu.Unlock()
	}
}
