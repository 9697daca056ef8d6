package archive

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Local is a Store over a directory: key "a/b/c" is the file root/a/b/c.
type Local struct{ root string }

// NewLocal returns a Store rooted at dir, which must exist.
func NewLocal(dir string) (*Local, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	st, err := os.Stat(abs)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", dir)
	}
	return &Local{root: abs}, nil
}

func (l *Local) String() string { return l.root }

func (l *Local) path(key string) (string, error) {
	if key == "" || strings.HasPrefix(key, "/") || strings.HasSuffix(key, "/") {
		return "", fmt.Errorf("invalid key %q", key)
	}
	for _, seg := range strings.Split(key, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return "", fmt.Errorf("invalid key %q", key)
		}
	}
	return filepath.Join(l.root, filepath.FromSlash(key)), nil
}

// List walks the directory in S3 key order: at each level names are sorted
// as keys would be, a folder sorting as its name followed by "/".
func (l *Local) List(ctx context.Context, prefix string, delimited bool, fn func(Entry) error) error {
	dirKey, namePrefix := "", prefix
	if i := strings.LastIndex(prefix, "/"); i >= 0 {
		dirKey, namePrefix = prefix[:i+1], prefix[i+1:]
	}
	err := l.walk(ctx, dirKey, namePrefix, delimited, fn)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // an absent folder lists as empty, as in S3
	}
	return err
}

func (l *Local) walk(ctx context.Context, dirKey, namePrefix string, delimited bool, fn func(Entry) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	entries, err := os.ReadDir(filepath.Join(l.root, filepath.FromSlash(dirKey)))
	if err != nil {
		return err
	}
	type item struct {
		name  string // with a trailing "/" for folders
		entry fs.DirEntry
	}
	items := make([]item, 0, len(entries))
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), namePrefix) || strings.HasPrefix(e.Name(), ".tmp-") {
			continue
		}
		switch {
		case e.IsDir():
			items = append(items, item{e.Name() + "/", e})
		case e.Type().IsRegular():
			items = append(items, item{e.Name(), e})
		}
	}
	sort.Slice(items, func(i, j int) bool { return items[i].name < items[j].name })
	for _, it := range items {
		key := dirKey + it.name
		if it.entry.IsDir() {
			if delimited {
				if err := fn(Entry{Key: key, IsPrefix: true}); err != nil {
					return err
				}
				continue
			}
			if err := l.walk(ctx, key, "", false, fn); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			continue
		}
		if err := fn(Entry{Key: key}); err != nil {
			return err
		}
	}
	return nil
}

func (l *Local) Stat(ctx context.Context, key string) (Entry, error) {
	p, err := l.path(key)
	if err != nil {
		return Entry{}, err
	}
	st, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && !st.Mode().IsRegular()) {
		return Entry{}, fmt.Errorf("%s: %w", key, ErrNotFound)
	} else if err != nil {
		return Entry{}, err
	}
	return Entry{Key: key, Size: st.Size(), LastModified: st.ModTime().UTC()}, nil
}

func (l *Local) Get(ctx context.Context, key string) ([]byte, error) { return l.GetInto(ctx, key, nil) }

func (l *Local) GetInto(ctx context.Context, key string, buf []byte) ([]byte, error) {
	p, err := l.path(key)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", key, ErrNotFound)
	} else if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	return readAll(f, buf[:0], st.Size())
}

// Put writes through a temporary file and a rename, so a reader never sees
// half an object and a crash never leaves one.
func (l *Local) Put(ctx context.Context, key string, body []byte) error {
	p, err := l.path(key)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".tmp-")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(body)
	if werr == nil {
		werr = tmp.Sync()
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), p)
	}
	if werr != nil {
		os.Remove(tmp.Name())
		return werr
	}
	return nil
}

func (l *Local) Copy(ctx context.Context, src, dst string) error {
	if src == dst {
		return fmt.Errorf("copy %s: %w", src, ErrSelfCopy)
	}
	b, err := l.Get(ctx, src)
	if err != nil {
		return err
	}
	return l.Put(ctx, dst, b)
}

func (l *Local) Delete(ctx context.Context, key string) error {
	p, err := l.path(key)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err // S3 deletes of absent keys succeed; so do ours
	}
	l.pruneEmptyDirs(filepath.Dir(p))
	return nil
}

// pruneEmptyDirs removes folders left empty, so that a listing does not show
// a date folder S3 would not show.
func (l *Local) pruneEmptyDirs(dir string) {
	for dir != l.root && strings.HasPrefix(dir, l.root) {
		if os.Remove(dir) != nil {
			return
		}
		dir = filepath.Dir(dir)
	}
}

func (l *Local) DeleteMany(ctx context.Context, keys []string) (map[string]error, error) {
	failed := map[string]error{}
	for _, k := range keys {
		if err := l.Delete(ctx, k); err != nil {
			failed[k] = err
		}
	}
	return failed, nil
}
