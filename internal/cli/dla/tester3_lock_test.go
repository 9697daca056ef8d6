package dla

import (
	"context"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/dla/gen"
)

// freezeProxy forwards PostgreSQL connections and can freeze one of them:
// its bytes stop flowing both ways and neither end hears that the other
// closed, as with a network partition, a NAT or firewall that dropped the
// connection's state, or a failover that leaves the old server silent.
type freezeProxy struct {
	addr    string
	mu      sync.Mutex
	byPort  map[int]chan struct{} // server-side local port -> closed when frozen
	release chan struct{}         // closed to end every frozen connection
	once    sync.Once
}

func newFreezeProxy(t *testing.T, target string) *freezeProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &freezeProxy{addr: ln.Addr().String(), byPort: map[int]chan struct{}{}, release: make(chan struct{})}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			frozen := make(chan struct{})
			p.mu.Lock()
			p.byPort[s.LocalAddr().(*net.TCPAddr).Port] = frozen
			p.mu.Unlock()
			pipe := func(dst, src net.Conn) {
				buf := make([]byte, 32<<10)
				for {
					n, err := src.Read(buf)
					select {
					case <-frozen: // swallow, and never tell the other end
						<-p.release
						dst.Close()
						return
					default:
					}
					if n > 0 {
						if _, werr := dst.Write(buf[:n]); werr != nil {
							return
						}
					}
					if err != nil {
						select {
						case <-frozen:
							<-p.release
						default:
						}
						dst.Close()
						return
					}
				}
			}
			go pipe(s, c)
			go pipe(c, s)
		}
	}()
	return p
}

func (p *freezeProxy) unfreeze() {
	p.once.Do(func() { close(p.release) })
}

func (p *freezeProxy) freeze(port int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	ch, ok := p.byPort[port]
	if ok {
		close(ch)
	}
	return ok
}

// The lock's session is checked with a Ping that has no deadline. When the
// lock's connection goes silent (the server ended the session, a failover
// or a partition, but the client never hears a FIN or RST) the Ping waits
// for ever: the watcher never notices the lock is gone, run A goes on
// recovering without it, and a second run B on the same archive and
// database takes the lock and runs alongside A, which is what the lock is
// there to prevent (item 5: both write the same rows, race to move the same
// objects, and move written ones to failed-sqs). Here run A's database
// traffic goes through a proxy; its lock connection alone is frozen and its
// backend terminated (in this test's database only).
func TestTester3LockSessionGoneSilent(t *testing.T) {
	h := localHostile(t)
	ctx := context.Background()
	store, err := archive.NewLocal(filepath.Dir(h.spec))
	if err != nil {
		t.Fatal(err)
	}
	err = gen.Generate(gen.Options{Stack: "demo", Count: 1500, Seed: 3, MinGranules: 1, MaxGranules: 3, Malformed: -1}, func(o gen.Object) error {
		return store.Put(ctx, o.Key, o.Body)
	})
	if err != nil {
		t.Fatal(err)
	}
	db := hostileDB(t)
	u, err := url.Parse(db)
	if err != nil {
		t.Fatal(err)
	}
	proxy := newFreezeProxy(t, u.Host)
	defer proxy.unfreeze()
	viaProxy := *u
	viaProxy.Host = proxy.addr
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)

	done := make(chan runResult, 1)
	go func() {
		done <- runAt(t, time.Now, noPrompt, "", "recover", "--archive", h.spec, "--database-url", viaProxy.String(), "--offline", "--yes", "--concurrency", "1")
	}()
	var pid int32
	var port int32
	for i := 0; i < 300 && pid == 0; i++ {
		_ = conn.QueryRow(ctx, `SELECT l.pid, a.client_port FROM pg_locks l JOIN pg_stat_activity a USING (pid)
			WHERE l.locktype = 'advisory' AND l.granted AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&pid, &port)
		if pid == 0 {
			time.Sleep(50 * time.Millisecond)
		}
	}
	if pid == 0 {
		t.Fatal("run A never took its lock")
	}
	i0 := 0
	left := func() int {
		n := 0
		_ = filepath.WalkDir(filepath.Join(h.spec, "dead-letter-archive/sqs"), func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				n++
			}
			return nil
		})
		return n
	}
	for start := left(); i0 < 600 && left() >= start; i0++ { // until A has planned and is recovering
		time.Sleep(50 * time.Millisecond)
	}
	atFreeze := left()
	if !proxy.freeze(int(port)) {
		t.Fatalf("no proxied connection from port %d", port)
	}
	if _, err := conn.Exec(ctx, `SELECT pg_terminate_backend($1)`, pid); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second) // the watcher checks ten times a second, a ping may take half a second: room for a loaded machine
	before := left()
	b := runAt(t, time.Now, noPrompt, "", "recover", "--archive", h.spec, "--database-url", db, "--offline", "--yes", "--limit", "5")
	select {
	case a := <-done:
		t.Fatalf("run A ended (exit %d) before B was checked; the test proves nothing: %s", a.code, a.stderr)
	default:
	}
	after := left()
	proxy.unfreeze()
	var a runResult
	select {
	case a = <-done:
	case <-time.After(120 * time.Second):
		t.Fatal("run A did not end")
	}
	if b.code != 1 || !strings.Contains(b.stderr, "lock") {
		t.Errorf("run B (exit %d) took the lock and ran while run A, whose lock session had gone silent, was still recovering"+
			" (objects in sqs/: %d when A's lock connection froze, %d a second later when B started, %d after B); A never noticed and ended with exit %d, not stopped:\n%s",
			b.code, atFreeze, before, after, a.code, firstLines(b.stderr, 3))
	}
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}

// The archive lock is keyed by the local archive's path, so one archive
// reached by two paths is two archives to the lock: the same share mounted
// at /mnt/dla on one host and /data/dla on another (NFS, EFS), or a bind
// mount on one host. Two operators recovering it into the one database are
// not refused, and run at once (item 5's duplicate writes and racing
// moves). Keying a local archive by its stack folder's device and inode,
// or by a marker file inside it, would not depend on the path. Here a bind
// mount gives the second path (the test needs root; it is skipped without).
func TestTester3SameLocalArchiveByTwoPathsIsNotLocked(t *testing.T) {
	h := localHostile(t)
	ctx := context.Background()
	store, err := archive.NewLocal(filepath.Dir(h.spec))
	if err != nil {
		t.Fatal(err)
	}
	err = gen.Generate(gen.Options{Stack: "demo", Count: 1500, Seed: 3, MinGranules: 1, MaxGranules: 3, Malformed: -1}, func(o gen.Object) error {
		return store.Put(ctx, o.Key, o.Body)
	})
	if err != nil {
		t.Fatal(err)
	}
	second := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(second, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount(filepath.Dir(h.spec), second, "", syscall.MS_BIND, ""); err != nil {
		t.Skipf("cannot bind-mount a second path to the archive: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(second, 0) })
	db := hostileDB(t)
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	done := make(chan runResult, 1)
	go func() {
		done <- runAt(t, time.Now, noPrompt, "", "recover", "--archive", h.spec, "--database-url", db, "--offline", "--yes", "--concurrency", "1")
	}()
	var locked bool
	for i := 0; i < 300 && !locked; i++ {
		_ = conn.QueryRow(ctx, `SELECT count(*) > 0 FROM pg_locks WHERE locktype = 'advisory' AND granted
			AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&locked)
		if !locked {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if !locked {
		t.Fatal("run A never took its lock")
	}
	b := runAt(t, time.Now, noPrompt, "", "recover", "--archive", filepath.Join(second, "demo"), "--database-url", db, "--offline", "--yes", "--limit", "5")
	running := true
	select {
	case <-done:
		running = false
	default:
	}
	a := <-done
	if !running {
		t.Fatalf("run A ended before B was checked; the test proves nothing (A exit %d)", a.code)
	}
	if b.code != 1 || !strings.Contains(b.stderr, "lock") {
		t.Errorf("run B on the same archive by a second path (exit %d) ran while run A held the archive's lock:\n%s", b.code, firstLines(b.stderr, 3))
	}
}
