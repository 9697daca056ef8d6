package testsupport

import (
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
)

// TCPProxy forwards TCP connections to a server (PostgreSQL) and can cut
// them all at once, as a server crash or a network partition would, without
// disturbing other tests that share the server.
type TCPProxy struct {
	Addr   string
	target string
	ln     net.Listener
	mu     sync.Mutex
	conns  []net.Conn
	down   bool
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
			go func() { _, _ = io.Copy(s, c); s.Close() }()
			go func() { _, _ = io.Copy(c, s); c.Close() }()
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
