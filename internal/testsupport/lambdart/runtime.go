// Package lambdart runs a Lambda function's real `bootstrap` binary under a
// local AWS Lambda Runtime API (next, response, error, init error), and
// feeds it from SQS as Lambda's SQS event-source mapping does with
// ReportBatchItemFailures. Tests use it to run the processors exactly as
// they run in AWS, and to kill them mid-invocation.
//
//	bin := lambdart.Build(t, "./cmd/push-dlq")
//	rt := lambdart.Start(t, lambdart.Function{Bootstrap: bin, Env: env})
//	esm := &lambdart.ESM{Client: c, QueueURL: url, VisibilityTimeout: 2, ReportBatchItemFailures: true}
//	res, err := esm.PollOnce(ctx, rt)
//
// One process serves one invocation at a time, as in Lambda. It starts on
// the first Invoke (a cold start) and is reused until it dies; the next
// Invoke after a death starts a fresh one.
//
// What a function's tests should know:
//
//   - The process gets a minimal environment (see Function), not the
//     test's: pass everything it needs in Function.Env, including the
//     endpoints of the test services (ServiceEnv). Credentials are the test
//     ones (testsupport.AccessKey/SecretKey), the region us-east-1.
//   - Its stdout and stderr go to one file: Runtime.Logs (all of it),
//     Invocation.Logs (what it wrote while holding that invocation, complete
//     when Invoke returns), JSONLines/JSONLogs to read structured lines.
//   - Outcomes: a returned handler error is Invocation.FunctionError (the
//     process lives on); a process that dies while holding an invocation
//     (os.Exit, panic after reporting, SIGKILL) is ErrCrashed, Lambda's
//     "Runtime.ExitError"; a deadline overrun is ErrTimedOut and kills the
//     process; a failure before the first /next (a Go main that exits over
//     a bad environment variable) is ErrInitFailed, whose message carries
//     the process's output.
//   - Through an ESM, any of those failures deletes nothing: the whole
//     batch comes back after the visibility timeout. Only a successful
//     response deletes, minus its batchItemFailures.
//   - Faults: Kill (now), KillDuring (the nth invocation, right after the
//     process received it), KillDuringOnLog (the nth invocation, once its
//     output contains a string, e.g. the log line of its third record).
//   - Measures: Stats (cold starts, per-invocation durations, peak RSS per
//     process from /proc VmHWM); RuntimeStats.Summary for a log line and
//     RuntimeStats.Report for a benchmark's metrics.
package lambdart

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/testsupport"
)

var (
	// ErrInitFailed: the process posted /runtime/init/error, exited before
	// asking for work, or did not ask for work within InitTimeout. The
	// wrapping error carries the init error's type and message, or the
	// process's exit status and its output (where a Go main that fails
	// before lambda.Start writes its reason).
	ErrInitFailed = errors.New("lambda init failed")
	// ErrCrashed: the process died (or was killed) while it held the
	// invocation; Lambda reports this as "Runtime.ExitError". The next
	// Invoke starts a fresh process (a cold start).
	ErrCrashed = errors.New("Runtime.ExitError: the function's process exited during the invocation")
	// ErrTimedOut: the invocation ran past its deadline (Function.Timeout).
	// The process is killed, as Lambda does ("Sandbox.Timedout"); the next
	// Invoke is a cold start.
	ErrTimedOut = errors.New("Sandbox.Timedout: the invocation ran past its deadline")
)

// MaxResponseBytes is Lambda's limit on a function's response payload.
const MaxResponseBytes = 6 << 20

// Function describes the function to run.
type Function struct {
	Bootstrap string            // path from Build
	Env       map[string]string // the function's environment, on top of (and overriding) the defaults below
	Timeout   time.Duration     // per invocation (the deadline header); default 30s

	Name        string        // AWS_LAMBDA_FUNCTION_NAME; default "test-function"
	MemoryMB    int           // AWS_LAMBDA_FUNCTION_MEMORY_SIZE; default 128 (informative only: nothing enforces it)
	Region      string        // AWS_REGION; default us-east-1
	InitTimeout time.Duration // process start → first /next; default 10s, as Lambda's init phase
}

// FunctionError is what the function posted to /invocation/{id}/error (or
// to /runtime/init/error).
type FunctionError struct {
	Type    string `json:"errorType"`
	Message string `json:"errorMessage"`
	Body    []byte `json:"-"` // the raw body posted
}

func (e *FunctionError) Error() string { return e.Type + ": " + e.Message }

// Invocation is the outcome of one Invoke.
type Invocation struct {
	Payload       []byte         // the response body (nil on a function error)
	FunctionError *FunctionError // set when the function posted /error
	Duration      time.Duration  // handed to the process → response or error
	Cold          bool           // first invocation of its process
	RequestID     string
	N             int    // number of this invocation over the Runtime's life (1-based; 0 if never handed to a process)
	Logs          []byte // what the process wrote between receiving the invocation and answering it
}

// RuntimeStats are measurements over the Runtime's life.
type RuntimeStats struct {
	Processes      int             // processes started
	ColdStarts     int             // processes that reached their first /next
	ColdStart      []time.Duration // process start → first /next, per cold start
	Invocations    int             // invocations handed to a process
	Durations      []time.Duration // per invocation that answered (response or error)
	FunctionErrors int
	Crashes        int // ErrCrashed outcomes
	Timeouts       int // ErrTimedOut outcomes
	InitFailures   int // ErrInitFailed outcomes
	MaxRSSBytes    int64
	RSSBytes       []int64 // peak VmHWM per process, in start order
}

// Runtime is a local Lambda Runtime API serving one function.
type Runtime struct {
	t       testing.TB
	fn      Function
	srv     *httptest.Server
	home    string
	logPath string
	logFile *os.File

	invokeMu sync.Mutex // one invocation at a time, as Lambda gives a process

	mu        sync.Mutex
	gen       int
	proc      *process
	procs     map[int]*process
	calls     map[string]*call
	handed    int
	killAt    map[int]bool
	killOnLog map[int]string
	stats     RuntimeStats
	closed    bool
}

type process struct {
	gen        int
	cmd        *exec.Cmd
	started    time.Time
	next       chan *call
	ready      chan struct{} // closed at the first /next
	readyOnce  sync.Once
	initFailed chan struct{} // closed when /runtime/init/error is posted
	initOnce   sync.Once
	exited     chan struct{} // closed when the process is reaped
	exitErr    error
	initErr    *FunctionError
	logFrom    int64
	hwm        int64
	count      int
	current    *call
}

type call struct {
	id        string
	payload   []byte
	deadline  time.Time
	accepted  chan struct{}
	done      chan result
	n         int
	cold      bool
	proc      *process
	handedAt  time.Time
	logFrom   int64
	finished  bool
	killed    bool
	killMatch string
}

type result struct {
	payload []byte
	ferr    *FunctionError
	at      time.Time
}

// Start serves the runtime API for fn. The process starts on the first
// Invoke; t.Cleanup kills it and stops the server.
func Start(t testing.TB, fn Function) *Runtime {
	t.Helper()
	if fn.Bootstrap == "" {
		t.Fatal("lambdart: Function.Bootstrap is empty (use Build)")
	}
	if fn.Timeout <= 0 {
		fn.Timeout = 30 * time.Second
	}
	if fn.Name == "" {
		fn.Name = "test-function"
	}
	if fn.MemoryMB <= 0 {
		fn.MemoryMB = 128
	}
	if fn.Region == "" {
		fn.Region = "us-east-1"
	}
	if fn.InitTimeout <= 0 {
		fn.InitTimeout = 10 * time.Second
	}
	dir := t.TempDir()
	r := &Runtime{t: t, fn: fn, home: filepath.Join(dir, "home"), logPath: filepath.Join(dir, "output.log"),
		procs: map[int]*process{}, calls: map[string]*call{}, killAt: map[int]bool{}, killOnLog: map[int]string{}}
	if err := os.MkdirAll(r.home, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(r.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	r.logFile = f
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{gen}/2018-06-01/runtime/invocation/next", r.handleNext)
	mux.HandleFunc("POST /{gen}/2018-06-01/runtime/invocation/{id}/response", r.handleResponse)
	mux.HandleFunc("POST /{gen}/2018-06-01/runtime/invocation/{id}/error", r.handleError)
	mux.HandleFunc("POST /{gen}/2018-06-01/runtime/init/error", r.handleInitError)
	r.srv = httptest.NewServer(mux)
	t.Cleanup(r.Close)
	return r
}

// Close kills the process and stops the server. Start registers it with
// t.Cleanup; calling it earlier is allowed.
func (r *Runtime) Close() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.closed = true
	p := r.proc
	r.mu.Unlock()
	if p != nil {
		r.killProc(p)
		<-p.exited
	}
	r.srv.Close()
	r.logFile.Close()
}

// Invoke runs one invocation and waits for its outcome. A function error
// is not an error here: it is Invocation.FunctionError. The errors are
// ErrInitFailed, ErrCrashed, ErrTimedOut (each wrapped with detail) and
// ctx's error (the process is killed if it held the invocation).
func (r *Runtime) Invoke(ctx context.Context, payload []byte) (Invocation, error) {
	r.invokeMu.Lock()
	defer r.invokeMu.Unlock()
	c := &call{id: newRequestID(), payload: payload, accepted: make(chan struct{}), done: make(chan result, 1)}
	var p *process
	for attempt := 0; ; attempt++ {
		var err error
		p, err = r.ensureProcess()
		if err != nil {
			return Invocation{}, err
		}
		initTimer := time.NewTimer(time.Until(p.started.Add(r.fn.InitTimeout)))
		select {
		case <-p.ready:
		case <-p.exited:
		case <-p.initFailed:
		case <-initTimer.C:
		case <-ctx.Done():
			initTimer.Stop()
			return Invocation{}, ctx.Err()
		}
		initTimer.Stop()
		if err := r.initOutcome(p); err != nil {
			return Invocation{Cold: true}, err
		}
		c.deadline = time.Now().Add(r.fn.Timeout)
		select {
		case p.next <- c:
		case <-p.exited:
			// Died between invocations: Lambda starts a new one.
			if attempt < 3 {
				continue
			}
			return Invocation{}, fmt.Errorf("%w: the process keeps dying between invocations (%v)", ErrCrashed, p.exitErr)
		case <-ctx.Done():
			return Invocation{}, ctx.Err()
		}
		break
	}
	<-c.accepted
	timer := time.NewTimer(time.Until(c.deadline))
	defer timer.Stop()
	var res result
	var outcome error
	select {
	case res = <-c.done:
	case <-p.exited:
		select {
		case res = <-c.done: // answered just before dying
		default:
			outcome = fmt.Errorf("%w (%v)", ErrCrashed, p.exitErr)
		}
	case <-timer.C:
		r.mu.Lock()
		c.killed = true
		r.mu.Unlock()
		r.killProc(p)
		<-p.exited
		outcome = fmt.Errorf("%w: task timed out after %s", ErrTimedOut, r.fn.Timeout)
	case <-ctx.Done():
		r.mu.Lock()
		c.killed = true
		r.mu.Unlock()
		r.killProc(p)
		<-p.exited
		outcome = ctx.Err()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	inv := Invocation{Cold: c.cold, RequestID: c.id, N: c.n}
	end := res.at
	if outcome != nil {
		end = time.Now()
		c.finished = true
		switch {
		case errors.Is(outcome, ErrCrashed):
			r.stats.Crashes++
		case errors.Is(outcome, ErrTimedOut):
			r.stats.Timeouts++
		}
	} else {
		inv.Payload, inv.FunctionError = res.payload, res.ferr
		if res.ferr != nil {
			r.stats.FunctionErrors++
		}
		r.stats.Durations = append(r.stats.Durations, end.Sub(c.handedAt))
	}
	inv.Duration = end.Sub(c.handedAt)
	inv.Logs = r.readLogs(c.logFrom, -1)
	delete(r.calls, c.id)
	return inv, outcome
}

// initOutcome reports whether p is ready for work, killing it when its
// init failed.
func (r *Runtime) initOutcome(p *process) error {
	r.mu.Lock()
	initErr := p.initErr
	r.mu.Unlock()
	ready, exited := isClosed(p.ready), isClosed(p.exited)
	if initErr == nil && ready {
		return nil // if it died since, the handoff sees it and starts another
	}
	if !exited {
		r.killProc(p)
		<-p.exited
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stats.InitFailures++
	out := tail(r.readLogs(p.logFrom, -1))
	switch {
	case initErr != nil:
		return fmt.Errorf("%w: %s: %s\nprocess output:\n%s", ErrInitFailed, initErr.Type, initErr.Message, out)
	case exited:
		return fmt.Errorf("%w: Runtime.ExitError: the process exited before asking for work (%v)\nprocess output:\n%s", ErrInitFailed, p.exitErr, out)
	default:
		return fmt.Errorf("%w: the process did not ask for work within %s\nprocess output:\n%s", ErrInitFailed, r.fn.InitTimeout, out)
	}
}

func (r *Runtime) ensureProcess() (*process, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, errors.New("lambdart: runtime closed")
	}
	if r.proc != nil && !isClosed(r.proc.exited) {
		return r.proc, nil
	}
	r.gen++
	p := &process{gen: r.gen, next: make(chan *call), ready: make(chan struct{}), initFailed: make(chan struct{}), exited: make(chan struct{})}
	cmd := exec.Command(r.fn.Bootstrap)
	cmd.Dir = filepath.Dir(r.fn.Bootstrap)
	cmd.Env = r.environ(p.gen)
	cmd.Stdout = r.logFile
	cmd.Stderr = r.logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p.cmd = cmd
	p.logFrom = r.logSize()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%w: start %s: %v", ErrInitFailed, r.fn.Bootstrap, err)
	}
	p.started = time.Now()
	r.procs[p.gen] = p
	r.proc = p
	r.stats.Processes++
	go func() {
		err := cmd.Wait()
		r.mu.Lock()
		p.exitErr = err
		r.mu.Unlock()
		close(p.exited)
	}()
	go r.sampleLoop(p)
	return p, nil
}

func (r *Runtime) environ(gen int) []string {
	fn := r.fn
	dir := filepath.Dir(fn.Bootstrap)
	env := map[string]string{
		"PATH":                            "/usr/local/bin:/usr/bin:/bin:/opt/bin",
		"HOME":                            r.home,
		"TZ":                              "UTC",
		"LANG":                            "en_US.UTF-8",
		"AWS_REGION":                      fn.Region,
		"AWS_DEFAULT_REGION":              fn.Region,
		"AWS_LAMBDA_FUNCTION_NAME":        fn.Name,
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": strconv.Itoa(fn.MemoryMB),
		"AWS_LAMBDA_FUNCTION_VERSION":     "$LATEST",
		"AWS_LAMBDA_INITIALIZATION_TYPE":  "on-demand",
		"AWS_LAMBDA_LOG_GROUP_NAME":       "/aws/lambda/" + fn.Name,
		"AWS_LAMBDA_LOG_STREAM_NAME":      time.Now().UTC().Format("2006/01/02") + "/[$LATEST]" + testsupport.RandomHex(16),
		"AWS_LAMBDA_RUNTIME_API":          r.runtimeAPI(gen),
		"LAMBDA_TASK_ROOT":                dir,
		"LAMBDA_RUNTIME_DIR":              dir,
		"_HANDLER":                        "bootstrap",
		"AWS_ACCESS_KEY_ID":               testsupport.AccessKey,
		"AWS_SECRET_ACCESS_KEY":           testsupport.SecretKey,
		"AWS_EC2_METADATA_DISABLED":       "true",
		"AWS_CONFIG_FILE":                 "/dev/null",
		"AWS_SHARED_CREDENTIALS_FILE":     "/dev/null",
	}
	for k, v := range fn.Env {
		env[k] = v
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}

// runtimeAPI is the AWS_LAMBDA_RUNTIME_API of process gen. The path
// prefix routes each request to the process that made it, so a dying
// process's last /next can never take a newer process's invocation.
// aws-lambda-go builds its URLs as "http://" + this + "/2018-06-01/...".
func (r *Runtime) runtimeAPI(gen int) string {
	return strings.TrimPrefix(r.srv.URL, "http://") + "/g" + strconv.Itoa(gen)
}

// FunctionARN is the Lambda-Runtime-Invoked-Function-Arn the function sees.
func (r *Runtime) FunctionARN() string {
	return "arn:aws:lambda:" + r.fn.Region + ":000000000000:function:" + r.fn.Name
}

func (r *Runtime) procFor(req *http.Request) *process {
	g := req.PathValue("gen")
	n, err := strconv.Atoi(strings.TrimPrefix(g, "g"))
	if err != nil || !strings.HasPrefix(g, "g") {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.procs[n]
}

func (r *Runtime) handleNext(w http.ResponseWriter, req *http.Request) {
	p := r.procFor(req)
	if p == nil {
		http.Error(w, `{"errorType":"InvalidRuntimeAPI","errorMessage":"unknown process"}`, http.StatusForbidden)
		return
	}
	r.sample(p)
	r.mu.Lock()
	p.current = nil
	r.mu.Unlock()
	p.readyOnce.Do(func() {
		r.mu.Lock()
		r.stats.ColdStarts++
		r.stats.ColdStart = append(r.stats.ColdStart, time.Since(p.started))
		r.mu.Unlock()
		close(p.ready)
	})
	var c *call
	select {
	case c = <-p.next:
	case <-req.Context().Done():
		return
	case <-p.exited:
		return
	}
	r.mu.Lock()
	r.handed++
	r.stats.Invocations++
	p.count++
	c.n, c.cold, c.proc, c.handedAt = r.handed, p.count == 1, p, time.Now()
	c.logFrom = r.logSize()
	p.current = c
	r.calls[c.id] = c
	kill := r.killAt[c.n]
	if kill {
		c.killed = true
	}
	c.killMatch = r.killOnLog[c.n]
	r.mu.Unlock()
	close(c.accepted)

	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Lambda-Runtime-Aws-Request-Id", c.id)
	h.Set("Lambda-Runtime-Deadline-Ms", strconv.FormatInt(c.deadline.UnixMilli(), 10))
	h.Set("Lambda-Runtime-Invoked-Function-Arn", r.FunctionARN())
	h.Set("Lambda-Runtime-Trace-Id", traceID())
	w.WriteHeader(http.StatusOK)
	w.Write(c.payload)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	if kill {
		r.killProc(p)
	} else if c.killMatch != "" {
		go r.watchLog(p, c)
	}
}

// watchLog kills p as soon as its output since c was handed contains
// c.killMatch, while c is unanswered.
func (r *Runtime) watchLog(p *process, c *call) {
	for {
		r.mu.Lock()
		done := c.finished || c.killed
		r.mu.Unlock()
		if done || isClosed(p.exited) {
			return
		}
		if bytes.Contains(r.readLogs(c.logFrom, -1), []byte(c.killMatch)) {
			r.mu.Lock()
			if c.finished {
				r.mu.Unlock()
				return
			}
			c.killed = true
			r.mu.Unlock()
			r.killProc(p)
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func (r *Runtime) handleResponse(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	var ferr *FunctionError
	if t := req.Trailer.Get("Lambda-Runtime-Function-Error-Type"); t != "" {
		// the handler's response stream failed midway
		ferr = &FunctionError{Type: t}
		if b, err := base64.StdEncoding.DecodeString(req.Trailer.Get("Lambda-Runtime-Function-Error-Body")); err == nil {
			json.Unmarshal(b, ferr)
			ferr.Body = b
		}
	} else if err != nil {
		ferr = &FunctionError{Type: "Runtime.ResponseError", Message: err.Error()}
	} else if len(body) > MaxResponseBytes {
		ferr = &FunctionError{Type: "Function.ResponseSizeTooLarge", Message: fmt.Sprintf("Response payload size (%d bytes) exceeded maximum allowed payload size (%d bytes).", len(body), MaxResponseBytes)}
	}
	if ferr != nil {
		body = nil
	}
	r.answer(w, req, result{payload: body, ferr: ferr})
}

func (r *Runtime) handleError(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.answer(w, req, result{ferr: parseFunctionError(body, req.Header.Get("Lambda-Runtime-Function-Error-Type"))})
}

func parseFunctionError(body []byte, typ string) *FunctionError {
	fe := &FunctionError{Body: body}
	if err := json.Unmarshal(body, fe); err != nil {
		fe.Message = string(body)
	}
	if fe.Type == "" {
		fe.Type = typ
	}
	if fe.Type == "" {
		fe.Type = "Unhandled"
	}
	return fe
}

func (r *Runtime) answer(w http.ResponseWriter, req *http.Request, res result) {
	res.at = time.Now()
	p := r.procFor(req)
	if p != nil {
		r.sample(p)
	}
	id := req.PathValue("id")
	r.mu.Lock()
	c := r.calls[id]
	if c == nil || c.proc != p || c.finished {
		r.mu.Unlock()
		http.Error(w, `{"errorType":"InvalidRequestID","errorMessage":"Invalid request ID"}`, http.StatusBadRequest)
		return
	}
	if !c.killed {
		c.finished = true
		c.done <- res
	}
	r.mu.Unlock()
	w.WriteHeader(http.StatusAccepted)
	io.WriteString(w, `{"status":"OK"}`)
}

func (r *Runtime) handleInitError(w http.ResponseWriter, req *http.Request) {
	p := r.procFor(req)
	if p == nil {
		http.Error(w, "unknown process", http.StatusForbidden)
		return
	}
	body, _ := io.ReadAll(req.Body)
	fe := parseFunctionError(body, req.Header.Get("Lambda-Runtime-Function-Error-Type"))
	r.mu.Lock()
	if p.initErr == nil {
		p.initErr = fe
	}
	r.mu.Unlock()
	p.initOnce.Do(func() { close(p.initFailed) })
	w.WriteHeader(http.StatusAccepted)
	io.WriteString(w, `{"status":"OK"}`)
}

// Kill sends SIGKILL to the process now (if one runs) and waits for it to
// die. An invocation it held fails with ErrCrashed.
func (r *Runtime) Kill() {
	r.mu.Lock()
	p := r.proc
	if p != nil && p.current != nil && !p.current.finished {
		p.current.killed = true
	}
	r.mu.Unlock()
	if p != nil {
		r.killProc(p)
		<-p.exited
	}
}

// KillDuring arranges for the process to be SIGKILLed while it holds its
// nth invocation (1-based, counted over the Runtime's life as in
// Invocation.N), right after the invocation was written to it. That
// Invoke returns ErrCrashed, whatever the process did with it.
func (r *Runtime) KillDuring(nth int) {
	r.mu.Lock()
	r.killAt[nth] = true
	r.mu.Unlock()
}

// KillDuringOnLog arranges for the process to be SIGKILLed during its nth
// invocation as soon as its output since receiving it contains match (for
// instance the log line of the third record), unless it answered first.
// The output is polled every few milliseconds, so the process may get a
// little further than the match before it dies: tests must not count on
// exactly where it stopped.
func (r *Runtime) KillDuringOnLog(nth int, match string) {
	r.mu.Lock()
	r.killOnLog[nth] = match
	r.mu.Unlock()
}

func (r *Runtime) killProc(p *process) {
	if isClosed(p.exited) {
		return
	}
	r.sample(p)
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	p.cmd.Process.Kill()
}

// Stats returns the measurements so far.
func (r *Runtime) Stats() RuntimeStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.proc != nil && !isClosed(r.proc.exited) {
		r.sampleLocked(r.proc)
	}
	s := r.stats
	s.ColdStart = append([]time.Duration(nil), s.ColdStart...)
	s.Durations = append([]time.Duration(nil), s.Durations...)
	s.RSSBytes = nil
	for g := 1; g <= r.gen; g++ {
		if p := r.procs[g]; p != nil {
			s.RSSBytes = append(s.RSSBytes, p.hwm)
			s.MaxRSSBytes = max(s.MaxRSSBytes, p.hwm)
		}
	}
	return s
}

// Logs returns everything the processes wrote to stdout and stderr, in
// order, across restarts.
func (r *Runtime) Logs() []byte { return r.readLogs(0, -1) }

// JSONLogs parses the lines of Logs that are JSON objects (structured log
// lines), skipping the others.
func (r *Runtime) JSONLogs() []map[string]any { return JSONLines(r.Logs()) }

// JSONLines parses the lines of out that are JSON objects.
func JSONLines(out []byte) []map[string]any {
	var lines []map[string]any
	for _, l := range bytes.Split(out, []byte("\n")) {
		l = bytes.TrimSpace(l)
		if len(l) == 0 || l[0] != '{' {
			continue
		}
		var m map[string]any
		if json.Unmarshal(l, &m) == nil {
			lines = append(lines, m)
		}
	}
	return lines
}

// readLogs reads the output file from offset from. The processes write it
// directly (no pipe), so whatever a process wrote before it answered is
// there when the answer arrives.
func (r *Runtime) readLogs(from, to int64) []byte {
	f, err := os.Open(r.logPath)
	if err != nil {
		return nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil
	}
	if to < 0 || to > fi.Size() {
		to = fi.Size()
	}
	if from >= to {
		return nil
	}
	b := make([]byte, to-from)
	n, _ := f.ReadAt(b, from)
	return b[:n]
}

func (r *Runtime) logSize() int64 {
	fi, err := os.Stat(r.logPath)
	if err != nil {
		return 0
	}
	return fi.Size()
}

func (r *Runtime) sampleLoop(p *process) {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-p.exited:
			return
		case <-t.C:
			r.sample(p)
		}
	}
}

func (r *Runtime) sample(p *process) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sampleLocked(p)
}

func (r *Runtime) sampleLocked(p *process) {
	if isClosed(p.exited) {
		return
	}
	if v := vmHWM(p.cmd.Process.Pid); v > p.hwm {
		p.hwm = v
	}
}

// vmHWM reads a process's peak resident set size from /proc.
func vmHWM(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(rest)
			if len(f) >= 1 {
				kb, _ := strconv.ParseInt(f[0], 10, 64)
				return kb * 1024
			}
		}
	}
	return 0
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func tail(b []byte) string {
	const n = 8 << 10
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

func newRequestID() string {
	h := testsupport.RandomHex(16)
	return h[0:8] + "-" + h[8:12] + "-4" + h[13:16] + "-a" + h[17:20] + "-" + h[20:32]
}

func traceID() string {
	return fmt.Sprintf("Root=1-%08x-%s;Parent=%s;Sampled=0", time.Now().Unix(), testsupport.RandomHex(12), testsupport.RandomHex(8))
}

// Summary is a one-line account of the stats, for test logs and closing
// notes: cold start, time per invocation, peak memory.
func (s RuntimeStats) Summary() string {
	return fmt.Sprintf("cold start %s (n=%d), invocation median %s p95 %s (n=%d), peak RSS %.1f MiB, %d crashes, %d timeouts, %d function errors",
		Median(s.ColdStart).Round(time.Microsecond*100), len(s.ColdStart), Median(s.Durations).Round(time.Microsecond*100),
		Percentile(s.Durations, 95).Round(time.Microsecond*100), len(s.Durations), float64(s.MaxRSSBytes)/(1<<20), s.Crashes, s.Timeouts, s.FunctionErrors)
}

// Report adds the stats to a benchmark's output: cold-start-ms (median),
// invoke-ms (median per invocation), max-rss-MiB.
func (s RuntimeStats) Report(b *testing.B) {
	if len(s.ColdStart) > 0 {
		b.ReportMetric(float64(Median(s.ColdStart))/1e6, "cold-start-ms")
	}
	if len(s.Durations) > 0 {
		b.ReportMetric(float64(Median(s.Durations))/1e6, "invoke-ms")
	}
	b.ReportMetric(float64(s.MaxRSSBytes)/(1<<20), "max-rss-MiB")
}

// Median of ds (0 when empty).
func Median(ds []time.Duration) time.Duration { return Percentile(ds, 50) }

// Percentile p (0-100, nearest rank) of ds (0 when empty).
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(math.Ceil(p/100*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

// BenchBatches is a processor benchmark's loop: one invocation of payload
// first (the cold start, outside ns/op), then b.N warm ones, each of which
// must answer with no batch item failure; then the runtime's metrics
// (cold start, median invocation, peak memory).
func BenchBatches(b *testing.B, rt *Runtime, payload []byte) {
	b.Helper()
	ctx := context.Background()
	if _, err := rt.Invoke(ctx, payload); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		inv, err := rt.Invoke(ctx, payload)
		if err != nil || !bytes.Contains(inv.Payload, []byte(`"batchItemFailures":[]`)) {
			b.Fatalf("%s %v", inv.Payload, err)
		}
	}
	rt.Stats().Report(b)
}
