// Command delayline puts a network's round trip in front of a TCP server,
// as a service in another region, or across the internet, would have one:
// every byte is delivered, in order, half the round trip after it was
// sent, in each direction. It relays bytes and understands no protocol,
// so it delays PostgreSQL's pipelined statements exactly as the network
// would (the statements after the first are not held back until the
// first's answer arrives, as a proxy that held whole requests would do),
// and HTTP's keep-alive requests the same way.
//
//	delayline -target 127.0.0.1:5432 -rtt 2ms
//
// It prints its own address (host:port) on the first line of stdout and
// relays until it is signalled. Bandwidth is not limited: what is measured
// is latency.
package main

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on")
	target := flag.String("target", "", "host:port of the server to relay to")
	rtt := flag.Duration("rtt", 2*time.Millisecond, "round trip to add: each direction is delayed by half of it")
	flag.Parse()
	if *target == "" {
		fmt.Fprintln(os.Stderr, "delayline: -target is required")
		os.Exit(2)
	}
	l, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, "delayline:", err)
		os.Exit(1)
	}
	fmt.Println(l.Addr().String())
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
		<-sig
		l.Close()
	}()
	if err := serve(l, *target, *rtt/2); err != nil && !errors.Is(err, net.ErrClosed) {
		fmt.Fprintln(os.Stderr, "delayline:", err)
		os.Exit(1)
	}
}

// serve relays every connection l accepts to target, each direction
// delayed by oneWay.
func serve(l net.Listener, target string, oneWay time.Duration) error {
	for {
		c, err := l.Accept()
		if err != nil {
			return err
		}
		go func() {
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				return
			}
			for _, conn := range []net.Conn{c, s} {
				if t, ok := conn.(*net.TCPConn); ok {
					_ = t.SetNoDelay(true)
				}
			}
			done := make(chan struct{}, 2)
			go func() { relay(s, c, oneWay); done <- struct{}{} }()
			go func() { relay(c, s, oneWay); done <- struct{}{} }()
			<-done
			<-done
			c.Close()
			s.Close()
		}()
	}
}

// chunk is bytes read from one side (n of the buffer b) and when they may
// be written to the other.
type chunk struct {
	b  *[]byte
	n  int
	at time.Time
}

// buffers are the reads' buffers, given back once written: a line relays
// tens of thousands of reads in a benchmark, and a buffer made for each
// one (32 KiB, most of it unused) had the line's collector take CPU from
// the services and the tool on the same cores, which a network's delay
// does not.
var buffers = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// relay copies src to dst, each read's bytes written oneWay after they
// were read, in order; then it closes dst's writing half, as src's was.
func relay(dst, src net.Conn, oneWay time.Duration) {
	// A line of chunks in flight: what the network holds. Reads go on
	// while earlier chunks wait, so bytes sent back to back arrive back
	// to back, each oneWay late, not one oneWay after the other.
	line := make(chan chunk, 4096)
	go func() {
		defer close(line)
		for {
			buf := buffers.Get().(*[]byte)
			n, err := src.Read(*buf)
			if n > 0 {
				line <- chunk{buf, n, time.Now().Add(oneWay)}
			} else {
				buffers.Put(buf)
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range line {
		if wait := time.Until(c.at); wait > 0 {
			time.Sleep(wait)
		}
		_, err := dst.Write((*c.b)[:c.n])
		buffers.Put(c.b)
		if err != nil {
			// The other side is gone: end the reader too.
			src.Close()
			for c := range line {
				buffers.Put(c.b)
			}
			break
		}
	}
	if t, ok := dst.(*net.TCPConn); ok {
		_ = t.CloseWrite()
	} else {
		dst.Close()
	}
}
