package main_test

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// trap is a TCP listener on 127.0.0.1 that closes every connection and
// records where each came from.
type trap struct {
	ln   net.Listener
	seen chan string
}

func newTrap(t *testing.T) *trap {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tr := &trap{ln: ln, seen: make(chan string, 64)}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			tr.seen <- c.RemoteAddr().String()
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return tr
}

func (tr *trap) url() string { return "http://" + tr.ln.Addr().String() }

// connections is how many connections the trap took before this call: it
// dials the trap itself and counts what was accepted before its own one
// (the backlog is accepted in order), so that a connection made just
// before the process ended is never missed.
func (tr *trap) connections(t *testing.T) int {
	t.Helper()
	c, err := net.Dial("tcp", tr.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	mine := c.LocalAddr().String()
	n := 0
	for from := range tr.seen {
		if from == mine {
			return n
		}
		n++
	}
	return n
}

// processorEnv is an environment that can reach nothing but 127.0.0.1:
// dummy credentials, no metadata service, no profile, no endpoint of
// Lambda's own, and every proxied request (a request to AWS goes through
// HTTPS_PROXY; a loopback one never does) sent to proxy.
func processorEnv(proxy string, extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") && !strings.Contains(strings.SplitN(kv, "=", 2)[0], "PROXY") &&
			!strings.Contains(strings.SplitN(kv, "=", 2)[0], "proxy") {
			env = append(env, kv)
		}
	}
	env = append(env, "AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=testtesttest", "AWS_REGION=us-east-1",
		"AWS_EC2_METADATA_DISABLED=true", "AWS_CONFIG_FILE="+os.DevNull, "AWS_SHARED_CREDENTIALS_FILE="+os.DevNull,
		"AWS_MAX_ATTEMPTS=1", "HTTPS_PROXY="+proxy, "HTTP_PROXY="+proxy, "NO_PROXY=")
	return append(env, extra...)
}

func runProcessor(t *testing.T, env []string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	err := cmd.Run()
	if err != nil && cmd.ProcessState == nil {
		t.Fatal(err)
	}
	return errOut.String(), cmd.ProcessState.ExitCode()
}

var processorVerbs = [][]string{
	{"processor", "status", "--function", "push-dlq"},
	{"processor", "arm", "--function", "push-dlq", "--window", winStart + "/" + winEnd, "--codes", "1004", "--dry-run"},
	{"processor", "disarm", "--function", "push-dlq", "--yes"},
}

// pushdlq's --endpoint-url covers SQS only. `processor status
// --endpoint-url http://127.0.0.1:9` sent its Lambda call toward
// lambda.us-east-1.amazonaws.com and then said to check --endpoint-url
// (issue 38 item 4). With the flag set and no endpoint of Lambda's own,
// every processor verb refuses in one line naming AWS_ENDPOINT_URL_LAMBDA,
// exit 2, and no connection is made: not to the SQS endpoint, not through
// the proxy a request to AWS would take.
func TestProcessorRefusesEndpointURLThatDoesNotCoverLambda(t *testing.T) {
	t.Parallel()
	for _, verb := range processorVerbs {
		t.Run(verb[1], func(t *testing.T) {
			t.Parallel()
			sqsTrap, proxy := newTrap(t), newTrap(t)
			stderr, code := runProcessor(t, processorEnv(proxy.url()), append(verb, "--endpoint-url", sqsTrap.url())...)
			want := "pushdlq: processor calls Lambda, and --endpoint-url covers SQS only: set AWS_ENDPOINT_URL_LAMBDA to reach Lambda at a local endpoint, or drop --endpoint-url\n"
			if code != 2 || stderr != want {
				t.Errorf("exit %d, stderr:\n%s\nwant exit 2 and:\n%s", code, stderr, want)
			}
			if n := proxy.connections(t); n != 0 {
				t.Errorf("%d connections went through the proxy toward AWS", n)
			}
			if n := sqsTrap.connections(t); n != 0 {
				t.Errorf("%d connections went to the SQS endpoint before the refusal", n)
			}
		})
	}
}

// With an endpoint of Lambda's own (AWS_ENDPOINT_URL_LAMBDA, or
// AWS_ENDPOINT_URL), --endpoint-url is not refused: the Lambda call goes
// to that endpoint, and nothing goes toward AWS.
func TestProcessorWithEndpointURLCallsLambdaAtItsOwnEndpoint(t *testing.T) {
	t.Parallel()
	for _, variable := range []string{"AWS_ENDPOINT_URL_LAMBDA", "AWS_ENDPOINT_URL"} {
		t.Run(variable, func(t *testing.T) {
			t.Parallel()
			sqsTrap, lambdaTrap, proxy := newTrap(t), newTrap(t), newTrap(t)
			stderr, code := runProcessor(t, processorEnv(proxy.url(), variable+"="+lambdaTrap.url()),
				append(processorVerbs[0], "--endpoint-url", sqsTrap.url())...)
			if code == 0 || code == 2 || strings.Contains(stderr, "covers SQS only") {
				t.Errorf("exit %d (want the failure of a Lambda that closes the connection):\n%s", code, stderr)
			}
			if n := lambdaTrap.connections(t); n == 0 {
				t.Errorf("no connection reached the Lambda endpoint %s:\n%s", variable, stderr)
			}
			if n := proxy.connections(t); n != 0 {
				t.Errorf("%d connections went through the proxy toward AWS", n)
			}
		})
	}
}
