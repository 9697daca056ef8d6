// Command delayproxy passes HTTP/1.1 requests on to a server after holding
// each one a fixed time, as a distant server's round trip would: the
// benchmarks put it in front of versitygw to measure what a run costs when
// every S3 call takes 20 ms, as on real S3 (scripts/bench-s3).
//
//	delayproxy -target http://127.0.0.1:7070 -delay 20ms
//
// It relays bytes, one server connection per client connection, and does
// not parse HTTP: a client sends its next request on a connection only once
// the answer to the last one has arrived (HTTP/1.1 without pipelining, as
// the SDK and the AWS CLI do), so the first bytes a client sends after
// answer bytes (or on a new connection) begin a request, and those are held.
// An earlier version was an HTTP reverse proxy (net/http/httputil): it spent
// about as much CPU per request as versitygw itself (0.6–0.85 s for 2,000
// GETs), on the two cores the benchmark shares with dla and versitygw, so
// the figures with a delay measured the proxy's CPU as much as the delay.
// A "100 Continue" interim answer does not end a request.
//
// Not toxiproxy (github.com/Shopify/toxiproxy/v2, weighed for issue 40):
// its latency toxic, upstream, delays a GET or a LIST as this does, but
// passes every chunk through three goroutines and a timer. In front of a
// local server, 2,000 GETs of 64 KiB, 16 at a time, with 20 ms: 0.60 and
// 0.67 s of CPU in toxiproxy, 0.34 s in this relay (2026-12-02): the cost
// that made the reverse proxy above unfit. It would also hold a body sent
// after "100 Continue" a second time, and keeps no counts per kind.
//
// It prints its own URL on the first line of stdout, and on SIGINT or
// SIGTERM the number of requests per kind (LIST, GET, other) on stderr.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

var lists, gets, other atomic.Int64

func main() {
	target := flag.String("target", "", "URL of the server to pass requests on to")
	delay := flag.Duration("delay", 20*time.Millisecond, "time each request is held before it is passed on")
	addr := flag.String("addr", "127.0.0.1:0", "address to listen on")
	flag.Parse()
	u, err := url.Parse(*target)
	if err != nil || u.Host == "" || u.Scheme != "http" {
		fmt.Fprintln(os.Stderr, "delayproxy: -target must be an http:// URL")
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "delayproxy:", err)
		os.Exit(1)
	}
	fmt.Printf("http://%s\n", ln.Addr())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		ln.Close()
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() == nil {
				fmt.Fprintln(os.Stderr, "delayproxy:", err)
				os.Exit(1)
			}
			break
		}
		go relay(c.(*net.TCPConn), u.Host, *delay)
	}
	fmt.Fprintf(os.Stderr, "delayproxy: %d LIST, %d GET, %d other requests\n", lists.Load(), gets.Load(), other.Load())
}

// relay passes one client connection's bytes to a new server connection
// and back, holding the first bytes of each request delay.
func relay(client *net.TCPConn, target string, delay time.Duration) {
	defer client.Close()
	server, err := net.Dial("tcp", target)
	if err != nil {
		fmt.Fprintln(os.Stderr, "delayproxy:", err)
		return
	}
	defer server.Close()
	var answered atomic.Bool // answer bytes came since the last request began
	answered.Store(true)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // server to client
		defer wg.Done()
		defer client.CloseWrite()
		buf := make([]byte, 64<<10)
		for {
			n, err := server.Read(buf)
			if n > 0 {
				if !bytes.HasPrefix(buf[:n], []byte("HTTP/1.1 100 ")) {
					answered.Store(true)
				}
				if _, werr := client.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	buf := make([]byte, 64<<10)
	for {
		n, err := client.Read(buf)
		if n > 0 {
			if answered.Swap(false) {
				count(buf[:n])
				time.Sleep(delay)
			}
			if _, werr := server.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			if err == io.EOF {
				server.(*net.TCPConn).CloseWrite()
				wg.Wait() // the answer still on its way
			}
			break
		}
	}
}

// count tallies a request by its first line: a GET whose query asks for a
// listing (list-type=) is a LIST.
func count(head []byte) {
	line, _, _ := bytes.Cut(head, []byte("\r\n"))
	switch {
	case !bytes.HasPrefix(line, []byte("GET ")):
		other.Add(1)
	case bytes.Contains(line, []byte("list-type=")):
		lists.Add(1)
	default:
		gets.Add(1)
	}
}
