package testsupport

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
)

// TCPProxy forwards TCP connections to a server (PostgreSQL) and can cut
// them all at once, as a server crash or a network partition would, without
// disturbing other tests that share the server.
//
// It is hand-written, not toxiproxy (github.com/Shopify/toxiproxy/v2,
// embeddable in go test, weighed for issue 40). Toxiproxy's Stop and Start
// would give Cut and Restore (a stopped toxiproxy refuses connections,
// where this one accepts and closes them), but not the rest:
//   - RoundTrips follows both directions of each connection together (the
//     queries and Syncs a client sends against the ReadyForQuery each
//     answer ends), and a toxiproxy toxic sees one direction of one link,
//     with no state shared with the other direction;
//   - CutBefore cuts on what the bytes hold (a statement's text), which no
//     toxiproxy toxic does.
//
// The tests that only Cut and Restore could run on toxiproxy, with that
// change of fault; they keep this proxy rather than have two that forward
// the same way, one of them bringing toxiproxy's dependencies (prometheus,
// zerolog, gorilla/mux, tomb) into the tests.
type TCPProxy struct {
	Addr   string
	target string
	ln     net.Listener
	mu     sync.Mutex
	conns  []net.Conn
	down   bool
	trips  atomic.Int64
	marker []byte // CutBefore's
}

// NewTCPProxy listens on a free local port and forwards to target (host:port).
func NewTCPProxy(t testing.TB, target string) *TCPProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &TCPProxy{Addr: ln.Addr().String(), target: target, ln: ln}
	t.Cleanup(func() { ln.Close(); p.Cut() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			if p.down {
				p.mu.Unlock()
				c.Close()
				continue
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				p.mu.Unlock()
				c.Close()
				continue
			}
			p.conns = append(p.conns, c, s)
			p.mu.Unlock()
			rt := &roundTrips{trips: &p.trips}
			go func() {
				_, _ = io.Copy(&armedWriter{p: p, w: s}, io.TeeReader(c, &pgFrontend{rt: rt}))
				s.Close()
			}()
			go func() { _, _ = io.Copy(c, io.TeeReader(s, &pgBackend{rt: rt})); c.Close() }()
		}
	}()
	return p
}

// Cut closes every connection and refuses new ones until Restore.
func (p *TCPProxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// CutBefore arms a Cut for the first time a client sends bytes holding
// marker (a statement's text): they never reach the server, and every
// connection is cut then, as a database lost at exactly that step.
func (p *TCPProxy) CutBefore(marker string) {
	p.mu.Lock()
	p.marker = []byte(marker)
	p.mu.Unlock()
}

// armedWriter forwards a client's bytes to the server unless they hold
// the armed marker.
type armedWriter struct {
	p *TCPProxy
	w io.Writer
}

func (a *armedWriter) Write(b []byte) (int, error) {
	a.p.mu.Lock()
	hit := a.p.marker != nil && bytes.Contains(b, a.p.marker)
	if hit {
		a.p.marker = nil
	}
	a.p.mu.Unlock()
	if hit {
		a.p.Cut()
		return 0, net.ErrClosed
	}
	return a.w.Write(b)
}

// Restore accepts connections again.
func (p *TCPProxy) Restore() {
	p.mu.Lock()
	p.down = false
	p.mu.Unlock()
}

// ViaProxy rewrites a database URL to go through the proxy.
func (p *TCPProxy) ViaProxy(t testing.TB, dbURL string) string {
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = p.Addr
	return u.String()
}

// RoundTrips is the number of PostgreSQL round trips clients made through
// the proxy. A simple-protocol query or an extended-protocol Sync waits for
// the server's ReadyForQuery; one sent while none is awaited on its
// connection starts a round trip, and those sent before the replies come
// back (a pipeline: many Syncs in one write) ride on it.
func (p *TCPProxy) RoundTrips() int64 { return p.trips.Load() }

// roundTrips is one connection's count: the replies awaited, and the
// proxy's total of round trips.
type roundTrips struct {
	trips   *atomic.Int64
	pending atomic.Int64 // Syncs and queries sent, not yet answered
	ssl     atomic.Int64 // SSL/GSS requests answered by one untyped byte
}

// pgFrontend follows the messages a PostgreSQL client sends (the untyped
// startup and SSL/GSS requests, then type byte + length) and counts the
// ones that start a round trip.
type pgFrontend struct {
	rt      *roundTrips
	started bool   // past the startup message
	head    []byte // the header being read
	skip    int    // body bytes still to skip
}

func (f *pgFrontend) Write(b []byte) (int, error) {
	n := len(b)
	for len(b) > 0 {
		if f.skip > 0 {
			k := min(f.skip, len(b))
			f.skip, b = f.skip-k, b[k:]
			continue
		}
		want := 5 // type byte + length
		if !f.started {
			want = 8 // length + protocol code
		}
		k := min(want-len(f.head), len(b))
		f.head, b = append(f.head, b[:k]...), b[k:]
		if len(f.head) < want {
			continue
		}
		if f.started {
			if (f.head[0] == 'Q' || f.head[0] == 'S') && f.rt.pending.Add(1) == 1 {
				f.rt.trips.Add(1)
			}
			f.skip = int(binary.BigEndian.Uint32(f.head[1:5])) - 4
		} else {
			code := binary.BigEndian.Uint32(f.head[4:8])
			f.skip = int(binary.BigEndian.Uint32(f.head[0:4])) - 8
			f.started = code != 80877103 && code != 80877104 // SSLRequest, GSSENCRequest come before the startup
			if !f.started {
				f.rt.ssl.Add(1)
			} else if f.rt.pending.Add(1) == 1 {
				f.rt.trips.Add(1) // the startup: its replies end with a ReadyForQuery
			}
		}
		f.head = f.head[:0]
	}
	return n, nil
}

// pgBackend follows the messages a PostgreSQL server sends (after the
// one-byte answers to SSL/GSS requests, type byte + length) and counts
// the replies awaited that each ReadyForQuery ends.
type pgBackend struct {
	rt   *roundTrips
	head []byte
	skip int
}

func (f *pgBackend) Write(b []byte) (int, error) {
	n := len(b)
	for len(b) > 0 {
		if f.skip > 0 {
			k := min(f.skip, len(b))
			f.skip, b = f.skip-k, b[k:]
			continue
		}
		if len(f.head) == 0 && f.rt.ssl.Load() > 0 {
			f.rt.ssl.Add(-1) // 'N' (or 'S', 'G': the rest is encrypted and not followed)
			b = b[1:]
			continue
		}
		k := min(5-len(f.head), len(b))
		f.head, b = append(f.head, b[:k]...), b[k:]
		if len(f.head) < 5 {
			continue
		}
		if f.head[0] == 'Z' {
			f.rt.pending.Add(-1)
		}
		f.skip = int(binary.BigEndian.Uint32(f.head[1:5])) - 4
		f.head = f.head[:0]
	}
	return n, nil
}
