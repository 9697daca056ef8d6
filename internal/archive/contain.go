package archive

import (
	"context"
	"crypto/md5"
	"errors"
	"fmt"
	"strings"
)

// ErrOutside is returned (wrapped) for a key a command must not touch: one
// outside the archive's root, or one a server could resolve elsewhere.
var ErrOutside = errors.New("refused")

// CheckKey reports why key may not be touched by a command working on the
// archive under root ("<stack>/dead-letter-archive/"), or nil. A key must
// start with root and have no empty, "." or ".." segment (S3 servers and
// file systems may resolve those outside the root) and no NUL byte. Any
// other byte, a newline included, is a valid key.
func CheckKey(root, key string) error {
	rest, ok := strings.CutPrefix(key, root)
	if !ok || rest == "" {
		return fmt.Errorf("%w: it is outside %s", ErrOutside, root)
	}
	if strings.IndexByte(key, 0) >= 0 {
		return fmt.Errorf("%w: the key holds a NUL byte", ErrOutside)
	}
	// One pass, no allocation: this runs for every object a scan reads.
	start := 0
	for i := 0; i <= len(rest); i++ {
		if i < len(rest) && rest[i] != '/' && rest[i] != '\\' {
			continue
		}
		switch seg := rest[start:i]; {
		case seg == "." || seg == "..":
			return fmt.Errorf("%w: the key has a %q segment, which a server may resolve outside %s", ErrOutside, seg, root)
		case seg == "" && i < len(rest) && rest[i] == '/':
			return fmt.Errorf("%w: the key has an empty segment, which a server may resolve elsewhere", ErrOutside)
		}
		start = i + 1
	}
	return nil
}

// Contain returns store limited to the keys under root: every key a call
// names (to read, write, copy from or to, delete, or list under) is checked
// with CheckKey first, so that no command can reach outside the archive it
// was given, whether the key was listed, typed, piped or built by code.
// Listed entries are passed on as they are, so that a hostile key is still
// seen (and named when it is refused).
func Contain(store Store, root string) Store {
	if c, ok := store.(*contained); ok && c.root == root {
		return c
	}
	return &contained{inner: store, root: root}
}

// contained names every method of Store (no embedding), so that a method
// added to Store cannot reach the inner store unchecked: it will not compile
// until it is written here.
type contained struct {
	inner Store
	root  string
}

func (c *contained) String() string { return c.inner.String() }

func (c *contained) List(ctx context.Context, prefix string, delimited bool, fn func(Entry) error) error {
	if !strings.HasPrefix(prefix, c.root) {
		return fmt.Errorf("list %q: %w: it is outside %s", prefix, ErrOutside, c.root)
	}
	return c.inner.List(ctx, prefix, delimited, fn)
}

func (c *contained) Get(ctx context.Context, key string) ([]byte, error) {
	if err := CheckKey(c.root, key); err != nil {
		return nil, err
	}
	return c.inner.Get(ctx, key)
}

func (c *contained) GetInto(ctx context.Context, key string, buf []byte) ([]byte, error) {
	if err := CheckKey(c.root, key); err != nil {
		return nil, err
	}
	return c.inner.GetInto(ctx, key, buf)
}

func (c *contained) Stat(ctx context.Context, key string) (Entry, error) {
	if err := CheckKey(c.root, key); err != nil {
		return Entry{}, err
	}
	return c.inner.Stat(ctx, key)
}

func (c *contained) Put(ctx context.Context, key string, body []byte) error {
	if err := CheckKey(c.root, key); err != nil {
		return err
	}
	return c.inner.Put(ctx, key, body)
}

func (c *contained) PutNew(ctx context.Context, key string, body []byte, origin string) error {
	if err := CheckKey(c.root, key); err != nil {
		return err
	}
	return c.inner.PutNew(ctx, key, body, origin)
}

func (c *contained) Delete(ctx context.Context, key string) error {
	if err := CheckKey(c.root, key); err != nil {
		return err
	}
	return c.inner.Delete(ctx, key)
}

// DeleteChecked is the inner store's conditional delete, checked.
func (c *contained) DeleteChecked(ctx context.Context, key string, sum [md5.Size]byte) error {
	if err := CheckKey(c.root, key); err != nil {
		return err
	}
	return DeleteChecked(ctx, c.inner, key, sum)
}

// DeleteFast is the inner store's DeleteFast, checked.
func (c *contained) DeleteFast(ctx context.Context, key string, sum [md5.Size]byte) error {
	if err := CheckKey(c.root, key); err != nil {
		return err
	}
	return DeleteFast(ctx, c.inner, key, sum)
}

// DeleteMany deletes the keys that pass the check and reports the others as
// failed, so that one hostile key does not keep the rest from being deleted.
func (c *contained) DeleteMany(ctx context.Context, keys []string) (map[string]error, error) {
	ok := make([]string, 0, len(keys))
	refused := map[string]error{}
	for _, k := range keys {
		if err := CheckKey(c.root, k); err != nil {
			refused[k] = err
			continue
		}
		ok = append(ok, k)
	}
	failed, err := c.inner.DeleteMany(ctx, ok)
	if failed == nil {
		failed = map[string]error{}
	}
	for k, e := range refused {
		failed[k] = e
	}
	return failed, err
}
