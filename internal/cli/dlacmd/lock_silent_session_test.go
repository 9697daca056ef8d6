package dlacmd

import (
	"context"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
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

// (Fixed: the check now has a 500 ms deadline, and a silent session is ended
// on the server and the lock taken again.) The break: the lock's session
// was checked with a Ping that had no deadline. When the
// lock's connection goes silent (the server ended the session, a failover
// or a partition, but the client never hears a FIN or RST) the Ping waits
// for ever: the watcher never notices the lock is gone, run A goes on
// recovering without it, and a second run B on the same archive and
// database takes the lock and runs alongside A, which is what the lock is
// there to prevent (item 5: both write the same rows, race to move the same
// objects, and move written ones to failed-sqs). Here run A's database
// traffic goes through a proxy; its lock connection alone is frozen and its
// backend terminated (in this test's database only).
func TestLockSessionGoneSilentIsNoticed(t *testing.T) {
	h, db := lockArchive(t, 4000)
	u, err := url.Parse(db)
	if err != nil {
		t.Fatal(err)
	}
	proxy := newFreezeProxy(t, u.Host)
	defer proxy.unfreeze()
	viaProxy := *u
	viaProxy.Host = proxy.addr
	run := startLockedRun(t, h.spec, db, viaProxy.String())
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
	if !proxy.freeze(int(run.port)) {
		t.Fatalf("no proxied connection from port %d", run.port)
	}
	if _, err := run.conn.Exec(context.Background(), `SELECT pg_terminate_backend($1)`, run.pid); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // ten of the watcher's checks
	before := left()
	b := recoverAlongside(t, h.spec, db)
	select {
	case a := <-run.done:
		t.Fatalf("run A ended (exit %d) before B was checked; the test proves nothing: %s", a.code, a.stderr)
	default:
	}
	after := left()
	proxy.unfreeze()
	run.stop()
	var a runResult
	select {
	case a = <-run.done:
	case <-time.After(120 * time.Second): // interrupted: it finishes the object in flight
		t.Fatal("run A did not end once interrupted")
	}
	if b.code != 1 || !strings.Contains(b.stderr, "lock") {
		t.Errorf("run B (exit %d) took the lock and ran while run A, whose lock session had gone silent, was still recovering"+
			" (objects in sqs/: %d when A's lock connection froze, %d a second later when B started, %d after B); A never noticed and ended with exit %d, not stopped:\n%s",
			b.code, atFreeze, before, after, a.code, firstLines(b.stderr, 3))
	}
}
