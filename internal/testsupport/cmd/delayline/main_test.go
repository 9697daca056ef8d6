package main

import (
	"bytes"
	"crypto/rand"
	"io"
	"net"
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
// one round trip later, not one round trip each.
func TestEachByteArrivesOneRoundTripLaterAndPipelinesAreNotSerialised(t *testing.T) {
	const rtt = 40 * time.Millisecond
	c, err := net.Dial("tcp", echoLine(t, rtt))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	buf := make([]byte, 4)
	start := time.Now()
	if _, err := c.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(c, buf); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < rtt || d > rtt+30*time.Millisecond {
		t.Errorf("one exchange took %v, want about %v", d, rtt)
	}
	start = time.Now()
	for i := 0; i < 5; i++ {
		if _, err := c.Write([]byte("pipe")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond)
	}
	got := make([]byte, 20)
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < rtt || d > rtt+40*time.Millisecond {
		t.Errorf("five pipelined exchanges took %v, want about one round trip (%v) plus the 8 ms they were sent over", d, rtt)
	}
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
