// Command delayproxy passes HTTP requests on to a server after holding each
// one a fixed time, as a distant server's round trip would: the benchmarks
// put it in front of versitygw to measure what a run costs when every S3
// call takes 20 ms, as on real S3 (scripts/bench-s3).
//
//	delayproxy -target http://127.0.0.1:7070 -delay 20ms
//
// It prints its own URL on the first line of stdout, and on SIGINT or
// SIGTERM the number of requests per kind (LIST, GET, other) on stderr.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	target := flag.String("target", "", "URL of the server to pass requests on to")
	delay := flag.Duration("delay", 20*time.Millisecond, "time each request is held before it is passed on")
	addr := flag.String("addr", "127.0.0.1:0", "address to listen on")
	flag.Parse()
	u, err := url.Parse(*target)
	if err != nil || u.Host == "" {
		fmt.Fprintln(os.Stderr, "delayproxy: -target must be a URL")
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "delayproxy:", err)
		os.Exit(1)
	}
	var lists, gets, other atomic.Int64
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.Transport = &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 256, IdleConnTimeout: 90 * time.Second}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodGet && r.URL.Query().Has("list-type"):
			lists.Add(1)
		case r.Method == http.MethodGet:
			gets.Add(1)
		default:
			other.Add(1)
		}
		select {
		case <-time.After(*delay):
		case <-r.Context().Done():
			return
		}
		rp.ServeHTTP(w, r)
	})}
	fmt.Printf("http://%s\n", ln.Addr())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
		fmt.Fprintln(os.Stderr, "delayproxy:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "delayproxy: %d LIST, %d GET, %d other requests\n", lists.Load(), gets.Load(), other.Load())
}
