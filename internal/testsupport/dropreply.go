package testsupport

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// DropReplyProxy is a TCP proxy that reads the HTTP requests passing
// through it, forwards each one to the server, and, for the requests drop
// picks, throws the server's reply away and cuts the client's connection:
// the request took effect, but the client never hears so (a network cut
// at the worst moment).
//
// It is hand-written, not toxiproxy (github.com/Shopify/toxiproxy/v2,
// weighed for issue 40): toxiproxy moves bytes and does not tell one HTTP
// request from the next. Its toxics can hold or drop a direction's bytes
// (timeout), cut after so many bytes (limit_data) or reset a connection,
// but not pass a chosen request on and throw away only its reply, chosen
// by operation, count and body.
type DropReplyProxy struct {
	URL     string
	mu      sync.Mutex
	calls   map[string]int
	dropped map[string]int
	drop    func(op string, nth int, body []byte) bool
}

// NewDropReplyProxy listens on a free local port in front of endpoint (an
// http:// URL). drop sees each request's X-Amz-Target operation, its
// number among the calls of that operation (1 for the first) and its
// body.
func NewDropReplyProxy(t testing.TB, endpoint string, drop func(op string, nth int, body []byte) bool) *DropReplyProxy {
	u, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &DropReplyProxy{URL: "http://" + ln.Addr().String(), calls: map[string]int{}, dropped: map[string]int{}, drop: drop}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", u.Host)
			if err != nil {
				c.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, c, s)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				defer s.Close()
				p.serve(c, s)
			}()
		}
	}()
	return p
}

// serve forwards one client connection's requests, one at a time.
func (p *DropReplyProxy) serve(c, s net.Conn) {
	cr, sr := bufio.NewReader(c), bufio.NewReader(s)
	for {
		req, err := http.ReadRequest(cr)
		if err != nil {
			return
		}
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return
		}
		op := req.Header.Get("X-Amz-Target")
		if i := strings.LastIndexByte(op, '.'); i >= 0 {
			op = op[i+1:]
		}
		p.mu.Lock()
		p.calls[op]++
		n := p.calls[op]
		p.mu.Unlock()
		drop := p.drop != nil && p.drop(op, n, body)
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.ContentLength = int64(len(body))
		if err := req.Write(s); err != nil {
			return
		}
		resp, err := http.ReadResponse(sr, req)
		if err != nil {
			return
		}
		rb, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return
		}
		if drop {
			p.mu.Lock()
			p.dropped[op]++
			p.mu.Unlock()
			return // the server acted; the client hears nothing
		}
		resp.Body = io.NopCloser(bytes.NewReader(rb))
		resp.ContentLength = int64(len(rb))
		if err := resp.Write(c); err != nil {
			return
		}
	}
}

// Calls returns the number of requests per operation so far.
func (p *DropReplyProxy) Calls(op string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls[op]
}

// Dropped returns the number of replies thrown away per operation.
func (p *DropReplyProxy) Dropped(op string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dropped[op]
}
