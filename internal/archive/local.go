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
	"sync"
)

// Local is a Store over a directory: key "a/b/c" is the file root/a/b/c.
//
// It never follows a symbolic link below its root, in a listing or for a
// named key, so that it cannot be led outside the archive (or to a second
// copy of an object inside it). A link is listed as an object, and reading,
// copying or deleting it is refused with ErrSymlink: search, show and
// recover all name it the same way.
type Local struct {
	root string
	dirs sync.Map // directory paths checked to be real directories, not links
}

// ErrSymlink is returned (wrapped) for a key that is, or passes through, a
// symbolic link in a local archive.
var ErrSymlink = errors.New("a symbolic link (dla does not follow links in a local archive)")

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

// realDir checks that dir (below the root) and every folder between it and
// the root are directories and not links. Checked folders are remembered:
// an archive has few of them and many objects in each.
func (l *Local) realDir(key, dir string) error {
	if dir == l.root {
		return nil
	}
	if _, ok := l.dirs.Load(dir); ok {
		return nil
	}
	if err := l.realDir(key, filepath.Dir(dir)); err != nil {
		return err
	}
	st, err := os.Lstat(dir)
	switch {
	case err != nil:
		return err
	case st.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("%s: %s is %w", key, dir, ErrSymlink)
	case !st.IsDir():
		return fmt.Errorf("%s: %s is not a directory: %w", key, dir, ErrNotFound)
	}
	l.dirs.Store(dir, struct{}{})
	return nil
}

// openFile opens the regular file at key for reading, refusing links.
func (l *Local) openFile(key string) (*os.File, fs.FileInfo, error) {
	p, err := l.path(key)
	if err != nil {
		return nil, nil, err
	}
	if err := l.realDir(key, filepath.Dir(p)); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, fmt.Errorf("%s: %w", key, ErrNotFound)
		}
		return nil, nil, err
	}
	lst, err := os.Lstat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil, fmt.Errorf("%s: %w", key, ErrNotFound)
	case err != nil:
		return nil, nil, err
	case lst.Mode()&fs.ModeSymlink != 0:
		return nil, nil, fmt.Errorf("%s is %w", key, ErrSymlink)
	case !lst.Mode().IsRegular():
		return nil, nil, fmt.Errorf("%s: not a regular file: %w", key, ErrNotFound)
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err == nil && !os.SameFile(lst, st) { // replaced by a link since the check
		err = fmt.Errorf("%s is %w", key, ErrSymlink)
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, st, nil
}

// List walks the directory in S3 key order: at each level names are sorted
// as keys would be, a folder sorting as its name followed by "/".
func (l *Local) List(ctx context.Context, prefix string, delimited bool, fn func(Entry) error) error {
	dirKey, namePrefix := "", prefix
	if i := strings.LastIndex(prefix, "/"); i >= 0 {
		dirKey, namePrefix = prefix[:i+1], prefix[i+1:]
	}
	err := l.realDir(prefix, filepath.Join(l.root, filepath.FromSlash(dirKey)))
	if err == nil {
		err = l.walk(ctx, dirKey, namePrefix, delimited, fn)
	}
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrNotFound) {
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
		case e.Type().IsRegular(), e.Type()&fs.ModeSymlink != 0:
			items = append(items, item{e.Name(), e}) // a link is listed, and refused when read
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
	f, st, err := l.openFile(key)
	if err != nil {
		return Entry{}, err
	}
	f.Close()
	return Entry{Key: key, Size: st.Size(), LastModified: st.ModTime().UTC()}, nil
}

func (l *Local) Get(ctx context.Context, key string) ([]byte, error) { return l.GetInto(ctx, key, nil) }

func (l *Local) GetInto(ctx context.Context, key string, buf []byte) ([]byte, error) {
	f, st, err := l.openFile(key)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readAll(f, buf[:0], st.Size())
}

// writeDir makes the folder for key and checks that no link is on its way.
func (l *Local) writeDir(key string) (string, error) {
	p, err := l.path(key)
	if err != nil {
		return "", err
	}
	if err := l.realDir(key, filepath.Dir(p)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return "", err
	}
	return p, l.realDir(key, filepath.Dir(p))
}

// tempFile writes body to a synced temporary file in dir.
func tempFile(dir string, body []byte) (string, error) {
	tmp, err := os.CreateTemp(dir, ".tmp-")
	if err != nil {
		return "", err
	}
	_, werr := tmp.Write(body)
	if werr == nil {
		werr = tmp.Sync()
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		os.Remove(tmp.Name())
		return "", werr
	}
	return tmp.Name(), nil
}

// Put writes through a temporary file and a rename, so a reader never sees
// half an object and a crash never leaves one.
func (l *Local) Put(ctx context.Context, key string, body []byte) error {
	p, err := l.writeDir(key)
	if err != nil {
		return err
	}
	if st, err := os.Lstat(p); err == nil && !st.Mode().IsRegular() {
		return fmt.Errorf("%s: not a regular file, not replaced", key)
	}
	tmp, err := tempFile(filepath.Dir(p), body)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, p); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// CopyNew writes the copy to a temporary file and links it into place: the
// link fails when the name is taken, so an object is never replaced, and a
// reader never sees half a copy.
func (l *Local) CopyNew(ctx context.Context, src, dst string) error {
	if src == dst {
		return fmt.Errorf("copy %s: %w", src, ErrSelfCopy)
	}
	b, err := l.Get(ctx, src)
	if err != nil {
		return err
	}
	p, err := l.writeDir(dst)
	if err != nil {
		return err
	}
	tmp, err := tempFile(filepath.Dir(p), b)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	err = os.Link(tmp, p)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("copy to %s: %w", dst, ErrExists)
	}
	if err != nil { // a file system without hard links: create exclusively
		f, oerr := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(oerr, fs.ErrExist) {
			return fmt.Errorf("copy to %s: %w", dst, ErrExists)
		} else if oerr != nil {
			return fmt.Errorf("copy to %s: %w (and %v)", dst, err, oerr)
		}
		_, werr := f.Write(b)
		if werr == nil {
			werr = f.Sync()
		}
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			os.Remove(p)
			return werr
		}
	}
	return nil
}

// Delete removes the regular file at key; it refuses a link (removing the
// link would not touch what it points to, but nothing listed through it is
// the archive's).
func (l *Local) Delete(ctx context.Context, key string) error {
	p, err := l.path(key)
	if err != nil {
		return err
	}
	if err := l.realDir(key, filepath.Dir(p)); err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrNotFound) {
			return nil // S3 deletes of absent keys succeed; so do ours
		}
		return err
	}
	if st, err := os.Lstat(p); err == nil && st.Mode()&fs.ModeSymlink != 0 {
		return fmt.Errorf("%s is %w", key, ErrSymlink)
	} else if err == nil && !st.Mode().IsRegular() {
		return fmt.Errorf("%s: not a regular file, not deleted", key)
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
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
		l.dirs.Delete(dir)
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
