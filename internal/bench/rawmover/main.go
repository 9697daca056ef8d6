// Command rawmover is the baseline of scripts/bench-pushdlq, built by that
// script only (it is not a release target): the fastest loop SQS allows for
// moving a queue, with the SDK and client settings the project's own tools
// use. It has no decisions, no journal and no hold. It also seeds the
// benchmark's queues, counts the SQS calls another tool makes (a counting
// proxy) and splits a profiled run's time into its phases (pushdlq writes
// its CPU profile itself: DEADLETTER_CPUPROFILE).
//
//	rawmover seed    -endpoint URL -prefix P -count N -size BYTES
//	rawmover move    -endpoint URL -source URL -target URL -workers N
//	rawmover proxy   -endpoint URL -calls FILE      (prints its URL, counts until SIGTERM)
//	rawmover cleanup -endpoint URL -prefix P
//	rawmover phases  -journal FILE -start UNIXSECS -end UNIXSECS
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/signal"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/deadletter/deadletter/internal/localaws"
	"github.com/deadletter/deadletter/internal/pushpolicy/gen"
)

func main() {
	if len(os.Args) < 2 {
		fail(fmt.Errorf("usage: rawmover seed|move|proxy|cleanup|phases [flags]"))
	}
	cmd, args := os.Args[1], os.Args[2:]
	var err error
	switch cmd {
	case "seed":
		err = seed(args)
	case "move":
		err = move(args)
	case "proxy":
		err = proxy(args)
	case "cleanup":
		err = cleanup(args)
	case "phases":
		err = phases(args)
	default:
		err = fmt.Errorf("unknown command %q", cmd)
	}
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "rawmover:", err)
	os.Exit(1)
}

func endpointFlag(fs *flag.FlagSet) *string {
	return fs.String("endpoint", os.Getenv(localaws.EnvSQSEndpoint), "SQS endpoint")
}

// seed creates PREFIXdlq, PREFIXP1..P3 (pushdlq's targets) and PREFIXraw
// (the raw mover's target), and puts count generated failed pushes on the
// DLQ, each padded to about size bytes. Every message is eligible for the
// window and codes the script gives pushdlq (the generator puts 5% on the
// day before its window, so the script's window starts a day earlier).
func seed(args []string) error {
	fs := flag.NewFlagSet("seed", flag.ExitOnError)
	endpoint := endpointFlag(fs)
	prefix := fs.String("prefix", "", "queue name prefix")
	count := fs.Int("count", 10000, "messages")
	size := fs.Int("size", 1024, "approximate body size in bytes")
	fs.Parse(args)
	if *prefix == "" {
		return fmt.Errorf("seed: -prefix is required")
	}
	ctx := context.Background()
	c := localaws.SQSClient(*endpoint)
	create := func(name string) (string, error) {
		out, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name)})
		if err != nil {
			return "", fmt.Errorf("create %s: %w", name, err)
		}
		return aws.ToString(out.QueueUrl), nil
	}
	dlq, err := create(*prefix + "dlq")
	if err != nil {
		return err
	}
	raw, err := create(*prefix + "raw")
	if err != nil {
		return err
	}
	for p := 1; p <= 3; p++ {
		if _, err := create(*prefix + "P" + strconv.Itoa(p)); err != nil {
			return err
		}
	}
	var bodies []string
	gen.Generate(gen.Options{Count: *count, Seed: 1, Start: time.Date(2025, 11, 14, 8, 30, 0, 0, time.UTC)}, func(_ int, body string) {
		if pad := *size - len(body) - len(`"pad":"",`); pad > 0 {
			body = `{"pad":"` + strings.Repeat("x", pad) + `",` + body[1:]
		}
		bodies = append(bodies, body)
	})
	// Eight sends in flight: seeding is not what is measured.
	var wg sync.WaitGroup
	var firstErr error
	var mu sync.Mutex
	next := atomic.Int64{}
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				start := int(next.Add(10)) - 10
				if start >= len(bodies) {
					return
				}
				in := &sqs.SendMessageBatchInput{QueueUrl: aws.String(dlq)}
				for i := start; i < min(start+10, len(bodies)); i++ {
					in.Entries = append(in.Entries, types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(bodies[i])})
				}
				out, err := c.SendMessageBatch(ctx, in)
				if err == nil && len(out.Failed) > 0 {
					err = fmt.Errorf("%d entries failed: %s", len(out.Failed), aws.ToString(out.Failed[0].Message))
				}
				if err != nil {
					mu.Lock()
					firstErr = fmt.Errorf("seed %s: %w", dlq, err)
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	fmt.Printf("dlq=%s\nbase=%s\nraw=%s\n", dlq, strings.TrimSuffix(dlq, "dlq"), raw)
	return nil
}

// counter counts SQS calls by operation.
type counter struct {
	mu    sync.Mutex
	calls map[string]int
}

func (c *counter) add(op string) {
	c.mu.Lock()
	c.calls[op]++
	c.mu.Unlock()
}

func (c *counter) snapshot() (map[string]int, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out, total := map[string]int{}, 0
	for k, v := range c.calls {
		out[k] = v
		total += v
	}
	return out, total
}

// move is the raw mover: workers each loop receive 10, SendMessageBatch to
// the target, DeleteMessageBatch of what the target accepted. A worker
// stops at its first receive that brings nothing. It prints one JSON line.
func move(args []string) error {
	fs := flag.NewFlagSet("move", flag.ExitOnError)
	endpoint := endpointFlag(fs)
	source := fs.String("source", "", "source queue URL")
	target := fs.String("target", "", "target queue URL")
	workers := fs.Int("workers", 4, "concurrent receive/send/delete loops")
	wait := fs.Int("wait", 1, "long-poll seconds per receive")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the move to this file (to compare with pushdlq's)")
	fs.Parse(args)
	if *source == "" || *target == "" || *workers < 1 {
		return fmt.Errorf("move: -source, -target and -workers ≥ 1 are required")
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer f.Close()
		defer pprof.StopCPUProfile()
	}
	ctx := context.Background()
	c := localaws.SQSClient(*endpoint)
	calls := &counter{calls: map[string]int{}}
	var moved, failed atomic.Int64
	var firstErr error
	var errMu sync.Mutex
	setErr := func(err error) {
		errMu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		errMu.Unlock()
	}
	start := time.Now()
	var wg sync.WaitGroup
	for range *workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				calls.add("ReceiveMessage")
				out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
					QueueUrl: aws.String(*source), MaxNumberOfMessages: 10, WaitTimeSeconds: int32(*wait),
					MessageAttributeNames: []string{"All"},
				})
				if err != nil {
					setErr(fmt.Errorf("receive: %w", err))
					return
				}
				if len(out.Messages) == 0 {
					return
				}
				send := &sqs.SendMessageBatchInput{QueueUrl: aws.String(*target)}
				for i, m := range out.Messages {
					send.Entries = append(send.Entries, types.SendMessageBatchRequestEntry{
						Id: aws.String(strconv.Itoa(i)), MessageBody: m.Body, MessageAttributes: m.MessageAttributes})
				}
				calls.add("SendMessageBatch")
				sent, err := c.SendMessageBatch(ctx, send)
				if err != nil {
					setErr(fmt.Errorf("send: %w", err))
					return
				}
				failed.Add(int64(len(sent.Failed)))
				del := &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(*source)}
				for _, s := range sent.Successful {
					i, _ := strconv.Atoi(aws.ToString(s.Id))
					del.Entries = append(del.Entries, types.DeleteMessageBatchRequestEntry{Id: s.Id, ReceiptHandle: out.Messages[i].ReceiptHandle})
				}
				if len(del.Entries) == 0 {
					continue
				}
				calls.add("DeleteMessageBatch")
				if _, err := c.DeleteMessageBatch(ctx, del); err != nil {
					setErr(fmt.Errorf("delete: %w", err))
					return
				}
				moved.Add(int64(len(del.Entries)))
			}
		}()
	}
	wg.Wait()
	secs := time.Since(start).Seconds()
	if firstErr != nil {
		return firstErr
	}
	byOp, total := calls.snapshot()
	n := moved.Load()
	perMsg := 0.0
	if n > 0 {
		perMsg = float64(total) / float64(n)
	}
	return json.NewEncoder(os.Stdout).Encode(map[string]any{
		"workers": *workers, "moved": n, "failed": failed.Load(), "seconds": secs, "msgs_per_s": float64(n) / secs,
		"calls": total, "calls_by_op": byOp, "calls_per_msg": perMsg,
	})
}

// proxy forwards TCP connections to the endpoint and counts the calls by
// operation: the X-Amz-Target header of each request the client sends (the
// AWS JSON protocol), read off the byte stream without touching it. (An
// HTTP reverse proxy in between made fauxqs replies arrive cut short under
// load.) On SIGTERM or SIGINT it writes {"calls": {op: n}, "total": n} to
// -calls.
func proxy(args []string) error {
	fs := flag.NewFlagSet("proxy", flag.ExitOnError)
	endpoint := endpointFlag(fs)
	file := fs.String("calls", "", "file the counts are written to on SIGTERM")
	fs.Parse(args)
	u, err := url.Parse(*endpoint)
	if err != nil {
		return err
	}
	calls := &counter{calls: map[string]int{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				s, err := net.Dial("tcp", u.Host)
				if err != nil {
					return
				}
				defer s.Close()
				go func() { io.Copy(c, s); c.Close() }()
				countTargets(io.TeeReader(c, s), calls)
			}()
		}
	}()
	fmt.Printf("http://%s\n", ln.Addr())
	os.Stdout.Sync()
	<-sig
	byOp, total := calls.snapshot()
	b, _ := json.Marshal(map[string]any{"calls": byOp, "total": total})
	return os.WriteFile(*file, append(b, '\n'), 0o644)
}

// countTargets reads a client's byte stream to its end and counts each
// "X-Amz-Target: Service.Operation" header line by operation.
func countTargets(r io.Reader, calls *counter) {
	const header = "\r\nx-amz-target: "
	buf := make([]byte, 0, 64<<10)
	chunk := make([]byte, 32<<10)
	for {
		n, err := r.Read(chunk)
		buf = append(buf, chunk[:n]...)
		for {
			i := bytes.Index(bytes.ToLower(buf), []byte(header))
			if i < 0 {
				break
			}
			eol := bytes.Index(buf[i+len(header):], []byte("\r\n"))
			if eol < 0 {
				buf = buf[i:]
				break
			}
			op := string(buf[i+len(header) : i+len(header)+eol])
			if j := strings.LastIndexByte(op, '.'); j >= 0 {
				op = op[j+1:]
			}
			calls.add(op)
			buf = buf[i+len(header)+eol:]
		}
		if len(buf) > len(header)+256 && bytes.Index(bytes.ToLower(buf), []byte("\r\nx-amz-")) < 0 {
			buf = append(buf[:0], buf[len(buf)-len(header):]...) // keep what may start a header
		}
		if err != nil {
			return
		}
	}
}

// cleanup deletes the queues whose names start with prefix.
func cleanup(args []string) error {
	fs := flag.NewFlagSet("cleanup", flag.ExitOnError)
	endpoint := endpointFlag(fs)
	prefix := fs.String("prefix", "", "queue name prefix")
	fs.Parse(args)
	if *prefix == "" {
		return fmt.Errorf("cleanup: -prefix is required")
	}
	ctx := context.Background()
	c := localaws.SQSClient(*endpoint)
	out, err := c.ListQueues(ctx, &sqs.ListQueuesInput{QueueNamePrefix: prefix, MaxResults: aws.Int32(1000)})
	if err != nil {
		return err
	}
	for _, q := range out.QueueUrls {
		if _, err := c.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(q)}); err != nil {
			return err
		}
	}
	return nil
}

// phases prints, for each event of a pushdlq journal, when it first and
// last happened, in seconds from the start of the run (the wall clock the
// script read just before starting pushdlq): where the run's time went.
func phases(args []string) error {
	fs := flag.NewFlagSet("phases", flag.ExitOnError)
	file := fs.String("journal", "", "pushdlq journal")
	start := fs.Float64("start", 0, "Unix time the run started")
	end := fs.Float64("end", 0, "Unix time the run ended")
	fs.Parse(args)
	f, err := os.Open(*file)
	if err != nil {
		return err
	}
	defer f.Close()
	type span struct{ first, last float64 }
	var order []string
	seen := map[string]*span{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var e struct{ Time, Event string }
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return err
		}
		t, err := time.Parse(time.RFC3339Nano, e.Time)
		if err != nil {
			return err
		}
		at := float64(t.UnixNano())/1e9 - *start
		if s, ok := seen[e.Event]; ok {
			s.last = at
			continue
		}
		order = append(order, e.Event)
		seen[e.Event] = &span{at, at}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	fmt.Printf("| journal event | first (s) | last (s) |\n|---|---|---|\n")
	for _, ev := range order {
		fmt.Printf("| %s | %.2f | %.2f |\n", ev, seen[ev].first, seen[ev].last)
	}
	fmt.Printf("| (process exit) | %.2f | |\n", *end-*start)
	return nil
}
