package main

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// Requests relayed over kept-alive connections arrive whole, their answers
// come back whole, and each request is counted once by kind: a body sent in
// several pieces, or after a "100 Continue", does not begin a new request.
func TestRelayCountsEachRequestOnce(t *testing.T) {
	var served, conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("server: %v", err)
		}
		w.Write([]byte(r.Method + " " + r.URL.RequestURI() + " " + string(body[:min(len(body), 16)])))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go relay(c.(*net.TCPConn), srv.Listener.Addr().String(), time.Millisecond)
		}
	}()
	lists.Store(0)
	gets.Store(0)
	other.Store(0)
	client := &http.Client{Transport: &http.Transport{ExpectContinueTimeout: 5 * time.Second, MaxIdleConnsPerHost: 1}}
	base := "http://" + ln.Addr().String()
	big := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB: many reads on the way
	requests := []struct {
		method, path string
		body         []byte
		expect       bool
	}{
		{"GET", "/bucket?list-type=2&prefix=a", nil, false},
		{"GET", "/bucket/key-1", nil, false},
		{"PUT", "/bucket/big", big, false},
		{"PUT", "/bucket/continued", big, true},
		{"GET", "/bucket/key-2", nil, false},
	}
	for _, rq := range requests {
		var body io.Reader
		if rq.body != nil {
			body = bytes.NewReader(rq.body)
		}
		req, err := http.NewRequest(rq.method, base+rq.path, body)
		if err != nil {
			t.Fatal(err)
		}
		if rq.expect {
			req.Header.Set("Expect", "100-continue")
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", rq.method, rq.path, err)
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		want := rq.method + " " + rq.path + " " + string(rq.body[:min(len(rq.body), 16)])
		if err != nil || string(got) != want {
			t.Fatalf("%s %s: answer %q (%v), want %q", rq.method, rq.path, got, err, want)
		}
	}
	if served.Load() != int64(len(requests)) || conns.Load() != 1 {
		t.Errorf("the server saw %d requests on %d connections, want %d on 1", served.Load(), conns.Load(), len(requests))
	}
	if lists.Load() != 1 || gets.Load() != 2 || other.Load() != 2 {
		t.Errorf("counted %d LIST, %d GET, %d other; want 1, 2, 2", lists.Load(), gets.Load(), other.Load())
	}
}
