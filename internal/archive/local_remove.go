package archive

import (
	"context"
	"crypto/md5"
	"errors"
	"fmt"
	"io/fs"
	"path"
)

// DeleteFast deletes key only while the MD5 of its bytes is sum,
// claiming the file first: once its bytes were compared, it is renamed to
// a temporary name of its own (hidden from listings), which of two runs
// removing one object at once only one can do. The other finds it gone
// (ErrNotFound): an object is never counted as deleted by both. The
// claimed file is read again: if its bytes changed in between, it is
// linked back under its key (never over a file that has appeared there
// since) and ErrChanged returned.
func (l *Local) DeleteFast(ctx context.Context, key string, sum [md5.Size]byte) error {
	gone := func() error { return fmt.Errorf("%s: %w", key, ErrNotFound) }
	a, err := l.locate(key)
	if errors.Is(err, fs.ErrNotExist) {
		return gone()
	} else if err != nil {
		return err
	}
	if err := l.realDir(a, key, path.Dir(a.rel)); err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrNotFound) {
			return gone()
		}
		return err
	}
	st, err := a.r.Lstat(a.rel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return gone()
	case err != nil:
		return err
	case st.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("%s is %w", key, ErrSymlink)
	case !st.Mode().IsRegular():
		return fmt.Errorf("%s: not a regular file, not deleted", key)
	}
	// Compared before the claim too: an object that changed is never
	// moved away from its key, so the rename below only ever takes bytes
	// this run wrote (a change in between is put back).
	if body, err := a.r.ReadFile(a.rel); errors.Is(err, fs.ErrNotExist) {
		return gone()
	} else if err != nil {
		return err
	} else if md5.Sum(body) != sum {
		return fmt.Errorf("%s: %w", key, ErrChanged)
	}
	claim := tempName(a.rel)
	if err := a.r.Rename(a.rel, claim); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return gone()
		}
		return err
	}
	body, err := a.r.ReadFile(claim)
	if err == nil && md5.Sum(body) == sum {
		if err := a.r.Remove(claim); err != nil {
			return err
		}
		l.pruneEmptyDirs(a, path.Dir(a.rel))
		return nil
	}
	// Not what was written (or unreadable): put it back as it was.
	if lerr := a.r.Link(claim, a.rel); lerr != nil {
		return fmt.Errorf("%s: its bytes changed, and putting it back failed (it is at %s): %w", key, claim, lerr)
	}
	_ = a.r.Remove(claim)
	if err != nil {
		return err
	}
	return fmt.Errorf("%s: %w", key, ErrChanged)
}
