package main

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// echoLine starts an echo server behind a delay line of rtt and returns
// the line's address.
func echoLine(t *testing.T, rtt time.Duration) string {
	t.Helper()
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { echo.Close() })
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c); c.Close() }()
		}
	}()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() { _ = serve(l, echo.Addr().String(), rtt/2) }()
	return l.Addr().String()
}

// A request's answer arrives one round trip after it was sent, and
// requests sent back to back (a pipeline) have their answers back to back,
// one round trip later, not one round trip each as a line that held each
// request until the last one's answer would give.
//
// The bounds hold on a loaded machine: an answer can never come back
// sooner than one round trip (the line sleeps), and a line that held the
// requests would bring the last of ten back after ten round trips, so the
// line passes if every answer is back within two. A try whose ten sends
// themselves were spread over half a round trip or more (the test was
// descheduled) proves nothing either way; a try can also be slowed past
// two round trips by the machine. Either is tried again with a round
// trip twice as long, up to 800 ms.
func TestEachByteArrivesOneRoundTripLaterAndPipelinesAreNotSerialised(t *testing.T) {
	const n = 10
	var tries []string
	for rtt := 100 * time.Millisecond; rtt <= 800*time.Millisecond; rtt *= 2 {
		sent, back := pipeline(t, echoLine(t, rtt), n)
		slowest := time.Duration(0)
		for k := range n {
			d := back[k].Sub(sent[k])
			if d < rtt {
				t.Fatalf("round trip %v: answer %d of %d came back %v after its request, sooner than one round trip", rtt, k+1, n, d)
			}
			slowest = max(slowest, d)
		}
		switch spread := sent[n-1].Sub(sent[0]); {
		case spread >= rtt/2:
			tries = append(tries, fmt.Sprintf("round trip %v: the %d requests took %v to send, which proves nothing", rtt, n, spread))
		case slowest >= 2*rtt:
			tries = append(tries, fmt.Sprintf("round trip %v: the slowest of %d pipelined answers came back %v after its request, not within two round trips", rtt, n, slowest))
		default:
			return
		}
	}
	t.Fatalf("the pipelined requests were held back:\n%s", strings.Join(tries, "\n"))
}

// pipeline writes n requests to the line at addr back to back, without
// waiting for answers, and reads the answers, checking that each is its
// request's and that they come in order; it returns when each request was
// sent and when its answer was back.
func pipeline(t *testing.T, addr string, n int) (sent, back []time.Time) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sent, back = make([]time.Time, n), make([]time.Time, n)
	request := func(k int) []byte { return fmt.Appendf(nil, "%04d", k) }
	read := make(chan error, 1)
	go func() {
		buf := make([]byte, 4)
		for k := range n {
			if _, err := io.ReadFull(c, buf); err != nil {
				read <- fmt.Errorf("answer %d: %w", k+1, err)
				return
			}
			back[k] = time.Now()
			if !bytes.Equal(buf, request(k)) {
				read <- fmt.Errorf("answer %d is %q, want %q: bytes lost, or out of order", k+1, buf, request(k))
				return
			}
		}
		read <- nil
	}()
	for k := range n {
		if k > 0 {
			time.Sleep(time.Millisecond) // a write of its own, not one with the last
		}
		sent[k] = time.Now()
		if _, err := c.Write(request(k)); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-read; err != nil {
		t.Fatal(err)
	}
	return sent, back
}

// Every byte arrives, in order, whatever the sizes of the writes, and a
// half-close passes through.
func TestEveryByteArrivesInOrder(t *testing.T) {
	c, err := net.Dial("tcp", echoLine(t, 2*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	want := make([]byte, 3<<20)
	if _, err := rand.Read(want); err != nil {
		t.Fatal(err)
	}
	go func() {
		for b := want; len(b) > 0; {
			n := min(len(b), 1+len(b)%70000)
			if _, err := c.Write(b[:n]); err != nil {
				return
			}
			b = b[n:]
		}
		_ = c.(*net.TCPConn).CloseWrite()
	}()
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%d bytes back of %d, or in another order", len(got), len(want))
	}
}
