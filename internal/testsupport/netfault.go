package testsupport

import (
	"net"
	"testing"
)

// Blackhole is the address (host:port) of a listener that accepts
// connections and never answers: a host that is there but silent, as
// behind a firewall that drops the replies or a hung proxy.
//
// It is hand-written, not toxiproxy (github.com/Shopify/toxiproxy/v2,
// weighed for issue 40): toxiproxy's timeout toxic (timeout 0) keeps a
// connection silent the same way, but only in front of an upstream it has
// dialled (it closes the client when the dial fails), so it would need a
// listener like this one behind it: the listener alone is the whole job.
func Blackhole(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}

// ClosedPort is an address (host:port) where nothing listens: a
// connection there is refused.
func ClosedPort(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}
