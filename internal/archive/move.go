package archive

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
)

// maxMoveSuffix bounds the names Move tries: dst, dst.1 ... dst.99.
const maxMoveSuffix = 100

// Move moves src to dst without ever replacing an object: when dst is taken
// by other bytes it tries dst.1, dst.2 and so on. The source is deleted only
// once the object at the destination is confirmed, byte for byte, to hold
// what src holds, so a lost reply, a changed source or a clash of names
// leaves the original in place rather than losing it. A destination that
// already holds src's bytes (the copy of an earlier attempt whose reply was
// lost) counts as the copy. It returns where the object went; on an error
// after the copy was made, that copy's key and an error saying so.
//
// Moves to one destination name are serialised within the process, so that
// two workers never both find a name free (a server that ignores
// If-None-Match would let the second copy replace the first).
func Move(ctx context.Context, s Store, src, dst string) (string, error) {
	if src == dst {
		return src, fmt.Errorf("move %s: %w", src, ErrSelfCopy)
	}
	unlock := moveLocks.lock(s.String() + "\x00" + dst)
	defer unlock()
	body, err := s.Get(ctx, src)
	if err != nil {
		return "", err
	}
	for i := 0; i < maxMoveSuffix; i++ {
		cand := dst
		if i > 0 {
			cand = dst + "." + strconv.Itoa(i)
		}
		if cand == src {
			return src, fmt.Errorf("move %s: %w", src, ErrSelfCopy)
		}
		err := s.CopyNew(ctx, src, cand)
		if err != nil && !errors.Is(err, ErrExists) {
			return "", err
		}
		there, gerr := s.Get(ctx, cand)
		switch {
		case gerr != nil && err == nil:
			return cand, fmt.Errorf("copied %s to %s, but could not read the copy back to confirm it (the original is kept): %w", src, cand, gerr)
		case gerr != nil:
			return "", fmt.Errorf("%s exists but could not be read to compare it with %s: %w", cand, src, gerr)
		case !bytes.Equal(there, body) && err == nil:
			return cand, fmt.Errorf("the copy at %s does not hold the bytes read from %s (did it change?); the original is kept", cand, src)
		case !bytes.Equal(there, body):
			continue // a different object has that name: try the next one
		}
		if err := s.Delete(ctx, src); err != nil {
			return cand, fmt.Errorf("copied %s to %s, but the original could not be deleted: %w", src, cand, err)
		}
		return cand, nil
	}
	return "", fmt.Errorf("move %s: %s and %d suffixed names are all taken by other objects", src, dst, maxMoveSuffix-1)
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
