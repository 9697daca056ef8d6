package archive

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Local is a Store over a directory: key "a/b/c" is the file root/a/b/c.
//
// It never follows a symbolic link below its root, in a listing or for a
// named key, so that it cannot be led outside the archive (or to a second
// copy of an object inside it). A link is listed as an object, and reading,
// copying or deleting it is refused with ErrSymlink: search, show and
// recover all name it the same way.
//
// Every file operation under "<stack>/dead-letter-archive/" goes through an
// os.Root opened at that folder, so that even a folder swapped for a link
// while a command runs cannot lead outside it: the kernel resolves each
// path one component at a time, below the root. The checks for links are
// made on top of that, to refuse the links that stay inside.
type Local struct {
	root  string
	roots sync.Map // "<stack>/dead-letter-archive" -> *os.Root
	dirs  sync.Map // "<top>\x00<dir>" checked to be real directories, not links

	// folders caches an os.Root per folder objects are read from (a date
	// folder), so that reading an object is one lstat and one open
	// relative to it, not a walk of every component from the archive root
	// (which made a scan twice as slow).
	foldersMu sync.Mutex
	folders   map[folderKey]*os.Root
	// dirFiles holds folders opened for reading (through their top's
	// os.Root, once checked), so that an object is read by one openat
	// relative to its folder (see quickGet); empty where that is not done.
	dirFiles dirCache
}

type folderKey struct{ top, dir string }

// quickReads: GetInto tries quickGet first (tests compare both ways).
var quickReads = true

// maxFolderRoots bounds the folders kept open (file descriptors).
const maxFolderRoots = 256

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

// checkKey refuses keys no file can have.
func checkLocalKey(key string) error {
	if key == "" || strings.HasPrefix(key, "/") || strings.HasSuffix(key, "/") {
		return fmt.Errorf("invalid key %q", key)
	}
	// Segment by segment, without splitting: this runs for every object a
	// scan reads.
	for rest := key; ; {
		seg, after, more := strings.Cut(rest, "/")
		if seg == "" || seg == "." || seg == ".." || strings.ContainsRune(seg, filepath.Separator) {
			return fmt.Errorf("invalid key %q", key)
		}
		if !more {
			return nil
		}
		rest = after
	}
}

// at is where a key lives: an os.Root and the path below it. A key of three
// or more segments lives below the root of its first two
// ("<stack>/dead-letter-archive"); a shorter one below the store's folder.
type at struct {
	r   *os.Root
	top string // the first two segments, "" for the store's folder
	rel string // slash-separated, below r
}

func (l *Local) locate(key string) (at, error) {
	if err := checkLocalKey(key); err != nil {
		return at{}, err
	}
	// top is the key's first two segments and rel the rest, both slices of
	// key (no allocation per object).
	first := strings.IndexByte(key, '/')
	second := -1
	if first >= 0 {
		if j := strings.IndexByte(key[first+1:], '/'); j >= 0 {
			second = first + 1 + j
		}
	}
	if second < 0 {
		r, err := l.rootOf("")
		return at{r: r, rel: key}, err
	}
	top := key[:second]
	r, err := l.rootOf(top)
	if err != nil {
		return at{}, fmt.Errorf("%s: %w", key, err)
	}
	return at{r: r, top: top, rel: key[second+1:]}, nil
}

// rootOf opens (once) the os.Root of top, refusing a top folder that is a
// link.
func (l *Local) rootOf(top string) (*os.Root, error) {
	if r, ok := l.roots.Load(top); ok {
		return r.(*os.Root), nil
	}
	dir := l.root
	if top != "" {
		first, second, _ := strings.Cut(top, "/")
		for _, p := range []string{filepath.Join(l.root, first), filepath.Join(l.root, first, second)} {
			st, err := os.Lstat(p)
			switch {
			case err != nil:
				return nil, err
			case st.Mode()&fs.ModeSymlink != 0:
				return nil, fmt.Errorf("%s is %w", p, ErrSymlink)
			case !st.IsDir():
				return nil, fmt.Errorf("%s is not a directory: %w", p, fs.ErrNotExist)
			}
		}
		dir = filepath.Join(l.root, first, second)
	}
	r, err := os.OpenRoot(dir + string(filepath.Separator) + ".") // a folder, never a FIFO (folderPath)
	if err != nil {
		return nil, withoutDot(err, dir)
	}
	if prev, loaded := l.roots.LoadOrStore(top, r); loaded {
		r.Close()
		return prev.(*os.Root), nil
	}
	return r, nil
}

// realDir checks that dir (below a's root, slash-separated, "." for the
// root itself) and every folder above it are directories and not links.
// Checked folders are remembered: an archive has few and many objects in
// each. (A folder swapped for a link later is still refused by os.Root if
// the link leads out; one that stays inside is followed, harmlessly.)
func (l *Local) realDir(a at, key, dir string) error {
	if dir == "." || dir == "" {
		return nil
	}
	id := a.top + "\x00" + dir
	if _, ok := l.dirs.Load(id); ok {
		return nil
	}
	if err := l.realDir(a, key, path.Dir(dir)); err != nil {
		return err
	}
	st, err := a.r.Lstat(dir)
	switch {
	case err != nil:
		return err
	case st.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("%s: %s is %w", key, dir, ErrSymlink)
	case !st.IsDir():
		return fmt.Errorf("%s: %s is not a directory: %w", key, dir, ErrNotFound)
	}
	l.dirs.Store(id, struct{}{})
	return nil
}

// folderPath names the folder dir (below an os.Root) so that it opens only
// as a folder: with a last component "." every component of the name,
// dir's own included, is opened as a folder (O_DIRECTORY), and a FIFO put
// in the place of a folder checked earlier (realDir remembers its checks)
// fails to open, where an open of it for reading would block until a
// writer came. (os.Root opens the last component of a name without
// O_DIRECTORY, so does os.OpenRoot.) withoutDot takes the "." out of an
// error again.
func folderPath(dir string) string { return dir + "/." }

// withoutDot is err with the path in it named as folderPath's caller
// named it (dir, not dir + "/.").
func withoutDot(err error, dir string) error {
	var pe *fs.PathError
	if errors.As(err, &pe) && (pe.Path == dir+"/." || pe.Path == dir+string(filepath.Separator)+".") {
		pe.Path = dir
	}
	return err
}

// openFile opens the regular file at key for reading, refusing links.
func (l *Local) openFile(key string) (*os.File, fs.FileInfo, error) {
	a, err := l.locate(key)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("%s: %w", key, ErrNotFound)
	} else if err != nil {
		return nil, nil, err
	}
	dir, name := path.Dir(a.rel), path.Base(a.rel)
	fr, err := l.folder(a, key, dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, fmt.Errorf("%s: %w", key, ErrNotFound)
		}
		return nil, nil, err
	}
	lst, err := fr.Lstat(name)
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
	// Opened by its full path (one openat, where an open through the
	// folder's os.Root costs three more system calls: a scan was a third
	// slower), then checked to be the very file the folder's root shows:
	// a folder swapped for a link on the way would open another file, with
	// another identity, and is refused. O_NONBLOCK: a FIFO put in the
	// file's place since the lstat opens at once (and is refused so),
	// where an open for reading would wait for a writer.
	f, err := os.OpenFile(filepath.Join(l.root, filepath.FromSlash(key)), os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("%s: %w", key, ErrNotFound)
	} else if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err == nil && !os.SameFile(lst, st) { // not the file below the archive root
		err = fmt.Errorf("%s is %w", key, ErrSymlink)
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, st, nil
}

// folder is the os.Root of dir below a's root, from the cache when it is
// there; a folder enters the cache once realDir has checked it (so a read
// from a known folder costs no check and no allocation).
func (l *Local) folder(a at, key, dir string) (*os.Root, error) {
	if dir == "." {
		return a.r, nil
	}
	k := folderKey{a.top, dir}
	l.foldersMu.Lock()
	r := l.folders[k]
	l.foldersMu.Unlock()
	if r != nil {
		return r, nil
	}
	if err := l.realDir(a, key, dir); err != nil {
		return nil, err
	}
	r, err := a.r.OpenRoot(folderPath(dir))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, withoutDot(err, dir))
	}
	l.foldersMu.Lock()
	defer l.foldersMu.Unlock()
	if prev := l.folders[k]; prev != nil {
		r.Close()
		return prev, nil
	}
	if l.folders == nil {
		l.folders = map[folderKey]*os.Root{}
	}
	if len(l.folders) >= maxFolderRoots {
		clear(l.folders) // the roots dropped are closed when collected
	}
	l.folders[k] = r
	return r, nil
}

// forgetFolder drops a removed folder's root from the cache.
func (l *Local) forgetFolder(a at, dir string) {
	l.foldersMu.Lock()
	delete(l.folders, folderKey{a.top, dir})
	l.dirFiles.drop(folderKey{a.top, dir})
	l.foldersMu.Unlock()
}

// List walks the directory in S3 key order: at each level names are sorted
// as keys would be, a folder sorting as its name followed by "/".
func (l *Local) List(ctx context.Context, prefix string, delimited bool, fn func(Entry) error) error {
	dirKey, namePrefix := "", prefix
	if i := strings.LastIndex(prefix, "/"); i >= 0 {
		dirKey, namePrefix = prefix[:i+1], prefix[i+1:]
	}
	err := l.walk(ctx, dirKey, namePrefix, delimited, fn)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrNotFound) {
		return nil // an absent folder lists as empty, as in S3
	}
	return err
}

// readDir reads the folder of dirKey ("" or ending in "/"), through the
// os.Root of its top when it is below one, refusing links on the way.
func (l *Local) readDir(dirKey string) ([]fs.DirEntry, error) {
	if strings.Count(dirKey, "/") < 2 {
		p := filepath.Join(l.root, filepath.FromSlash(dirKey))
		if st, err := os.Lstat(p); err != nil {
			return nil, err
		} else if st.Mode()&fs.ModeSymlink != 0 && p != l.root {
			return nil, fmt.Errorf("%s is %w", dirKey, ErrSymlink)
		}
		entries, err := os.ReadDir(p + string(filepath.Separator) + ".") // a folder, never a FIFO (folderPath)
		return entries, withoutDot(err, p)
	}
	a, err := l.locate(strings.TrimSuffix(dirKey, "/") + "/x")
	if err != nil {
		return nil, err
	}
	dir := path.Dir(a.rel)
	if f := l.openDirQuick(a, dir); f != nil {
		entries, err := f.ReadDir(-1) // walk sorts
		if err != nil || !l.keepDirFile(a, dir, f) {
			f.Close()
		}
		return entries, err
	}
	if err := l.realDir(a, dirKey, dir); err != nil {
		return nil, err
	}
	f, err := a.r.Open(folderPath(dir))
	if err != nil {
		return nil, withoutDot(err, dir)
	}
	entries, err := readDirTyped(f) // walk sorts
	if err != nil || !l.keepDirFile(a, dir, f) {
		f.Close()
	}
	return entries, err
}

func (l *Local) walk(ctx context.Context, dirKey, namePrefix string, delimited bool, fn func(Entry) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	entries, err := l.readDir(dirKey)
	if err != nil {
		return err
	}
	type item struct {
		name  string // with a trailing "/" for folders
		entry fs.DirEntry
	}
	items := make([]item, 0, len(entries))
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), namePrefix) || isTempName(e.Name()) {
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
	defer f.Close()
	return Entry{Key: key, Size: st.Size(), LastModified: st.ModTime().UTC(), Origin: readOrigin(f)}, nil
}

func (l *Local) Get(ctx context.Context, key string) ([]byte, error) { return l.GetInto(ctx, key, nil) }

func (l *Local) GetInto(ctx context.Context, key string, buf []byte) ([]byte, error) {
	if quickReads {
		if b, done, err := l.quickGet(key, buf); done {
			return b, err
		}
	}
	f, st, err := l.openFile(key)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st.Size() > int64(maxObjectSize) {
		return nil, fmt.Errorf("%s: %d bytes: %w", key, st.Size(), ErrTooLarge)
	}
	b, err := readAll(f, buf[:0], st.Size())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	return b, nil
}

// writeDir makes the folder for key and checks that no link is on its way.
func (l *Local) writeDir(key string) (at, error) {
	a, err := l.locate(key)
	if errors.Is(err, fs.ErrNotExist) {
		// A new archive: make its two top folders (a link there is
		// refused by locate, below), then find the key again.
		if segs := strings.SplitN(key, "/", 3); len(segs) == 3 {
			if merr := os.MkdirAll(filepath.Join(l.root, segs[0], segs[1]), 0o755); merr != nil {
				return a, merr
			}
			a, err = l.locate(key)
		}
	}
	if err != nil {
		return a, err
	}
	dir := path.Dir(a.rel)
	if err := l.realDir(a, key, dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return a, err
	}
	if dir != "." {
		if err := a.r.MkdirAll(dir, 0o755); err != nil {
			return a, err
		}
	}
	return a, l.realDir(a, key, dir)
}

// tempPrefix starts the names of the store's temporary files: followed by
// 16 hex digits, a name that is hidden from listings. Any other name, even
// one starting with a dot, is an object.
const tempPrefix = ".dla-tmp-"

func isTempName(name string) bool {
	rest, ok := strings.CutPrefix(name, tempPrefix)
	if !ok || len(rest) != 16 {
		return false
	}
	_, err := hex.DecodeString(rest)
	return err == nil
}

// tempName is a new temporary name (hidden from listings) in the folder
// of rel.
func tempName(rel string) string {
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	return path.Join(path.Dir(rel), tempPrefix+hex.EncodeToString(rnd[:]))
}

// tempFile writes body to a synced temporary file in the folder of rel.
func tempFile(a at, body []byte, origin string) (string, error) {
	name := tempName(a.rel)
	tmp, err := a.r.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return "", err
	}
	_, werr := tmp.Write(body)
	if werr == nil && origin != "" {
		// On the inode, so the link that puts the object in place
		// carries it: the object never appears without its origin.
		setOrigin(tmp, origin)
	}
	if werr == nil {
		werr = tmp.Sync()
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		a.r.Remove(name)
		return "", werr
	}
	return name, nil
}

// Put writes through a temporary file and a rename, so a reader never sees
// half an object and a crash never leaves one.
func (l *Local) Put(ctx context.Context, key string, body []byte) error {
	a, err := l.writeDir(key)
	if err != nil {
		return err
	}
	if st, err := a.r.Lstat(a.rel); err == nil && !st.Mode().IsRegular() {
		return fmt.Errorf("%s: not a regular file, not replaced", key)
	}
	tmp, err := tempFile(a, body, "")
	if err != nil {
		return err
	}
	if err := a.r.Rename(tmp, a.rel); err != nil {
		a.r.Remove(tmp)
		return err
	}
	return nil
}

// PutNew writes the object to a temporary file and links it into place:
// the link fails when the name is taken, so an object is never replaced,
// and a reader never sees half of one. The origin is kept in an extended
// attribute of the file where the file system keeps them (Linux), so that
// a move stopped between its copy and its delete finds its own copy again
// (Stat) instead of making a second one; elsewhere none is kept.
func (l *Local) PutNew(ctx context.Context, key string, body []byte, origin string) error {
	a, err := l.writeDir(key)
	if err != nil {
		return err
	}
	tmp, err := tempFile(a, body, origin)
	if err != nil {
		return err
	}
	defer a.r.Remove(tmp)
	err = a.r.Link(tmp, a.rel)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s: %w", key, ErrExists)
	}
	if err != nil { // a file system without hard links: create exclusively
		f, oerr := a.r.OpenFile(a.rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(oerr, fs.ErrExist) {
			return fmt.Errorf("%s: %w", key, ErrExists)
		} else if oerr != nil {
			return fmt.Errorf("%s: %w (and %v)", key, err, oerr)
		}
		_, werr := f.Write(body)
		if werr == nil {
			werr = f.Sync()
		}
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			a.r.Remove(a.rel)
			return werr
		}
	}
	return nil
}

// Delete removes the regular file at key; it refuses a link (removing the
// link would not touch what it points to, but nothing listed through it is
// the archive's).
func (l *Local) Delete(ctx context.Context, key string) error {
	a, err := l.locate(key)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // S3 deletes of absent keys succeed; so do ours
	} else if err != nil {
		return err
	}
	if err := l.realDir(a, key, path.Dir(a.rel)); err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrNotFound) {
			return nil
		}
		return err
	}
	if st, err := a.r.Lstat(a.rel); err == nil && st.Mode()&fs.ModeSymlink != 0 {
		return fmt.Errorf("%s is %w", key, ErrSymlink)
	} else if err == nil && !st.Mode().IsRegular() {
		return fmt.Errorf("%s: not a regular file, not deleted", key)
	}
	if err := a.r.Remove(a.rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	l.pruneEmptyDirs(a, path.Dir(a.rel))
	return nil
}

// pruneEmptyDirs removes folders left empty below an area folder (sqs/,
// failed-sqs/), so that a listing does not show a date folder S3 would not
// show. The area folders, dead-letter-archive/ and the stack folder stay:
// they are the archive, not its contents.
func (l *Local) pruneEmptyDirs(a at, dir string) {
	if a.top == "" {
		return
	}
	for strings.Contains(dir, "/") {
		if a.r.Remove(dir) != nil && (!l.removeStaleTemps(a, dir) || a.r.Remove(dir) != nil) {
			return
		}
		l.dirs.Delete(a.top + "\x00" + dir)
		l.forgetFolder(a, dir)
		dir = path.Dir(dir)
	}
}

// staleTempAge is how old a temporary file must be to be left over from a
// process that was killed (writing one takes milliseconds).
const staleTempAge = 10 * time.Minute

// removeStaleTemps removes the temporary files a killed process left in
// dir, when they are all that is left in it, and reports whether it did.
// Each is garbage: the source of its copy is still in place, or the copy
// was linked into place before the kill (the temporary name is then a
// second link to the same bytes).
func (l *Local) removeStaleTemps(a at, dir string) bool {
	f, err := a.r.Open(folderPath(dir))
	if err != nil {
		return false
	}
	entries, _ := f.ReadDir(8)
	f.Close()
	if len(entries) == 0 || len(entries) == 8 {
		return false
	}
	for _, e := range entries {
		info, err := e.Info()
		if !isTempName(e.Name()) || err != nil || !info.Mode().IsRegular() || time.Since(info.ModTime()) < staleTempAge {
			return false
		}
	}
	for _, e := range entries {
		if a.r.Remove(path.Join(dir, e.Name())) != nil {
			return false
		}
	}
	return true
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
