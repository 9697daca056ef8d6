package archive

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"syscall"
)

// quickGet reads the regular file at key the short way, when it can: one
// openat relative to its folder (already checked by realDir, and held open
// through its os.Root), refusing a link as the last component
// (O_NOFOLLOW), then fstat, read and close. That is three system calls
// fewer than openFile's lstat, open by path, poller registration and
// identity check, and no *os.File per object. A folder swapped for a link
// cannot lead elsewhere: the folder is the one opened when it was checked.
//
// done is false, and nothing was read, whenever the object is not a
// regular file that opened this way (missing, a link, a FIFO, an error,
// a key outside a date folder): the caller then takes the long way, which
// names the problem exactly as before. Only size and read errors are
// returned from here, worded as GetInto words them.
func (l *Local) quickGet(key string, buf []byte) (b []byte, done bool, err error) {
	a, err := l.locate(key)
	if err != nil {
		return nil, false, nil
	}
	dir, name := path.Dir(a.rel), path.Base(a.rel)
	if dir == "." {
		return nil, false, nil
	}
	h := l.dirFile(a, key, dir)
	if h == nil {
		return nil, false, nil
	}
	fd, err := openat(int(h.f.Fd()), name)
	l.releaseDir(h) // the folder is not closed while its descriptor is used
	if err != nil {
		return nil, false, nil
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if fstat(fd, &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return nil, false, nil
	}
	if st.Size > int64(maxObjectSize) {
		return nil, true, fmt.Errorf("%s: %d bytes: %w", key, st.Size, ErrTooLarge)
	}
	b, err = readSized(fdReader{fd, l, key}, buf[:0], st.Size)
	if err != nil {
		return nil, true, fmt.Errorf("%s: %w", key, err)
	}
	return b, true, nil
}

// readSized is readAll of a regular file whose size fstat gave: when the
// first read, asked for one byte more than that, returns exactly that many,
// the file ended there, and the read that would return 0 is not made (a
// fifth of a scan's system calls). Any other first read (the file grew or
// shrank since fstat, or the file system returns short reads) goes on as
// readAll does, until a read returns 0.
func readSized(r fdReader, buf []byte, size int64) ([]byte, error) {
	if size <= 0 || size > int64(maxObjectSize) {
		return readAll(r, buf, size)
	}
	if want := int(size) + 1; cap(buf) < want {
		buf = make([]byte, 0, want)
	}
	n, err := r.Read(buf[:size+1])
	switch {
	case err == io.EOF:
		return buf[:0], nil
	case err != nil:
		return buf[:0], err
	case int64(n) == size:
		return buf[:n], nil
	}
	return readAll(r, buf[:n], size)
}

// dirFile is dir's folder opened for reading, from the cache when it is
// there, acquired (releaseDir when its descriptor is no longer used); nil
// when it cannot be opened (the long way then reports why).
func (l *Local) dirFile(a at, key, dir string) *dirHandle {
	k := folderKey{a.top, dir}
	l.foldersMu.Lock()
	h := l.dirFiles.acquire(k)
	l.foldersMu.Unlock()
	if h != nil {
		return h
	}
	fr, err := l.folder(a, key, dir) // checks the folder (realDir) the first time
	if err != nil {
		return nil
	}
	f, err := fr.Open(".")
	if err != nil {
		return nil
	}
	l.foldersMu.Lock()
	defer l.foldersMu.Unlock()
	if h := l.dirFiles.put(k, f, folderKey{a.top, path.Dir(dir)}); h != nil {
		return h
	}
	f.Close()
	return l.dirFiles.acquire(k)
}

// releaseDir ends a use of a folder dirFile or openDirQuick acquired.
func (l *Local) releaseDir(h *dirHandle) {
	l.foldersMu.Lock()
	l.dirFiles.release(h)
	l.foldersMu.Unlock()
}

// keepDirFile offers the folder a listing opened (through its top's
// os.Root, once realDir had checked it) to the reads that follow: quickGet
// then opens the folder's objects relative to it, where it would open the
// folder again as an os.Root and as a file (about a dozen system calls a
// folder: an eighth of a scan of five years of date folders). It reports
// whether f was kept; the caller closes it otherwise. The parent it was
// opened through stays kept, for the next folders beside it.
func (l *Local) keepDirFile(a at, dir string, f *os.File) bool {
	l.foldersMu.Lock()
	defer l.foldersMu.Unlock()
	h := l.dirFiles.put(folderKey{a.top, dir}, f, folderKey{a.top, path.Dir(dir)})
	if h == nil {
		return false
	}
	l.dirFiles.release(h)
	return true
}

// openDirQuick opens the folder dir (below a's root) for a listing the
// short way, when its parent folder is already open (kept by an earlier
// listing): one openat relative to the parent, refusing a link
// (O_NOFOLLOW) and anything but a folder (O_DIRECTORY). That is the check
// realDir makes and the open through the os.Root in one system call, where
// the long way resolves the path again from the root for each (and the
// os.File it makes costs five more). The folder is then known to be real,
// as realDir would have found it. nil, with nothing opened, whenever it
// cannot be done this way (no open parent, or any error): the caller then
// takes the long way, which names the problem exactly as before.
func (l *Local) openDirQuick(a at, dir string) *os.File {
	parent, name := path.Dir(dir), path.Base(dir)
	if parent == "." || !quickReads {
		return nil
	}
	l.foldersMu.Lock()
	ph := l.dirFiles.acquire(folderKey{a.top, parent})
	l.foldersMu.Unlock()
	if ph == nil {
		return nil
	}
	fd, err := openatFlags(int(ph.f.Fd()), name, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NOFOLLOW|syscall.O_DIRECTORY)
	l.releaseDir(ph)
	if err != nil {
		return nil
	}
	l.dirs.Store(a.top+"\x00"+dir, struct{}{}) // realDir's check, made
	return os.NewFile(uintptr(fd), filepath.Join(l.root, filepath.FromSlash(a.top), filepath.FromSlash(dir)))
}

// openat opens an object relative to its folder: never through a link, and
// never waiting on a FIFO or taking a terminal.
func openat(dirfd int, name string) (int, error) {
	return openatFlags(dirfd, name, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_NOCTTY)
}

// openatFlags is openat(2) relative to dirfd, retried on EINTR.
func openatFlags(dirfd int, name string, flags int) (int, error) {
	for {
		fd, err := syscall.Openat(dirfd, name, flags, 0)
		if !errors.Is(err, syscall.EINTR) {
			return fd, err
		}
	}
}

func fstat(fd int, st *syscall.Stat_t) error {
	for {
		err := syscall.Fstat(fd, st)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// fdReader reads a file descriptor (io.Reader, io.EOF at the end; an
// error names the file as *os.File's would).
type fdReader struct {
	fd  int
	l   *Local
	key string
}

func (r fdReader) Read(p []byte) (int, error) {
	for {
		n, err := syscall.Read(r.fd, p)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case err != nil:
			return 0, &os.PathError{Op: "read", Path: filepath.Join(r.l.root, filepath.FromSlash(r.key)), Err: err}
		case n == 0 && len(p) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

// readDirTyped reads the whole folder f (opened through an os.Root). A
// folder opened through an os.Root stats every entry it reads (one
// fstatat per object: a sixth of a scan's system calls); read through a
// duplicate of its descriptor, the same folder gives each entry's type
// from the directory itself, as a listing needs. Nothing else is read
// through the duplicate: no path is resolved by it.
func readDirTyped(f *os.File) ([]fs.DirEntry, error) {
	fd, err := dupCloexec(int(f.Fd()))
	if err != nil {
		return f.ReadDir(-1)
	}
	dup := os.NewFile(uintptr(fd), f.Name())
	defer dup.Close()
	return dup.ReadDir(-1)
}

func dupCloexec(fd int) (int, error) {
	for {
		nfd, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_DUPFD_CLOEXEC, 0)
		if errno == syscall.EINTR {
			continue
		}
		if errno != 0 {
			return -1, errno
		}
		return int(nfd), nil
	}
}

// originAttr is the extended attribute that holds a copy's origin.
const originAttr = "user.deadletter.origin"

// setOrigin records origin on f; a file system without user extended
// attributes keeps none, and a move then never reuses a copy (it makes the
// next name instead), as before.
func setOrigin(f *os.File, origin string) {
	_ = syscall.Setxattr(fdPath(f), originAttr, []byte(origin), 0)
}

// readOrigin is the origin recorded on f, "" for none.
func readOrigin(f *os.File) string {
	buf := make([]byte, 128)
	n, err := syscall.Getxattr(fdPath(f), originAttr, buf)
	if err != nil || n <= 0 || n > len(buf) {
		return ""
	}
	return string(buf[:n])
}

// fdPath names an open file through /proc, so that its attributes are
// read and written on the file that was opened, whatever its path now.
func fdPath(f *os.File) string { return fmt.Sprintf("/proc/self/fd/%d", f.Fd()) }
