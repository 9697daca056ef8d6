package testsupport

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/deadletter/deadletter/internal/localaws"
)

// EnvSQSEndpoint names the test SQS server (fauxqs).
const EnvSQSEndpoint = localaws.EnvSQSEndpoint

// SQSEndpoint returns the endpoint of the test SQS server.
func SQSEndpoint(t testing.TB) string { return need(t, EnvSQSEndpoint, "SQS (fauxqs)") }

// SQSClientAt returns a client for an SQS endpoint, built as the CLI builds
// its own.
func SQSClientAt(endpoint string) *sqs.Client {
	return localaws.SQSClient(endpoint)
}

// SQSClient returns a client for the test SQS server.
func SQSClient(t testing.TB) *sqs.Client { return SQSClientAt(SQSEndpoint(t)) }

// NewQueue creates a uniquely named queue (name prefix + random suffix,
// ".fifo" when fifo) and deletes it after the test.
func NewQueue(t testing.TB, c *sqs.Client, prefix string, fifo bool) string {
	t.Helper()
	name := prefix + RandomHex(4)
	attrs := map[string]string{}
	if fifo {
		name += ".fifo"
		attrs["FifoQueue"] = "true"
	}
	return CreateQueue(t, c, name, attrs)
}

// CreateQueue creates a queue with an exact name and deletes it after the
// test.
func CreateQueue(t testing.TB, c *sqs.Client, name string, attrs map[string]string) string {
	t.Helper()
	out, err := c.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		t.Fatalf("create queue %s: %v", name, err)
	}
	u := aws.ToString(out.QueueUrl)
	t.Cleanup(func() { c.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(u)}) })
	return u
}

// SendBodies puts messages on a queue, ten at a time, each with the
// attributes attr returns for it (nil for none), and returns their message
// ids in the order of bodies.
func SendBodies(t testing.TB, c *sqs.Client, queueURL string, bodies []string, attr func(i int) map[string]types.MessageAttributeValue) []string {
	t.Helper()
	ids := make([]string, len(bodies))
	for start := 0; start < len(bodies); start += 10 {
		in := &sqs.SendMessageBatchInput{QueueUrl: aws.String(queueURL)}
		for i := start; i < min(start+10, len(bodies)); i++ {
			e := types.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), MessageBody: aws.String(bodies[i])}
			if attr != nil {
				e.MessageAttributes = attr(i)
			}
			if strings.HasSuffix(queueURL, ".fifo") {
				e.MessageGroupId = aws.String("g")
				e.MessageDeduplicationId = aws.String(RandomHex(8))
			}
			in.Entries = append(in.Entries, e)
		}
		out, err := c.SendMessageBatch(context.Background(), in)
		if err != nil || len(out.Failed) > 0 {
			t.Fatalf("seed %s: %v %+v", queueURL, err, out)
		}
		for _, ok := range out.Successful {
			i, _ := strconv.Atoi(aws.ToString(ok.Id))
			ids[i] = aws.ToString(ok.MessageId)
		}
	}
	return ids
}

// Drain receives every message of a queue (including in-flight and
// delayed ones, once they are visible again within wait) and deletes them.
// It is how tests see where each message ended up.
func Drain(t testing.TB, c *sqs.Client, queueURL string, wait time.Duration) []types.Message {
	t.Helper()
	ctx := context.Background()
	var all []types.Message
	deadline := time.Now().Add(wait)
	for {
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(queueURL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1, VisibilityTimeout: 60,
			MessageAttributeNames:       []string{"All"},
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		})
		if err != nil {
			t.Fatalf("drain %s: %v", queueURL, err)
		}
		for _, m := range out.Messages {
			all = append(all, m)
			c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(queueURL), ReceiptHandle: m.ReceiptHandle})
		}
		if len(out.Messages) == 0 {
			if time.Now().After(deadline) || QueueEmpty(t, c, queueURL) {
				return all
			}
		}
	}
}

// QueueEmpty reports whether a queue holds no message at all (visible,
// in flight or delayed).
func QueueEmpty(t testing.TB, c *sqs.Client, queueURL string) bool {
	t.Helper()
	out, err := c.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(queueURL), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}})
	if err != nil {
		t.Fatalf("attributes of %s: %v", queueURL, err)
	}
	a := out.Attributes
	return a["ApproximateNumberOfMessages"] == "0" && a["ApproximateNumberOfMessagesNotVisible"] == "0" && a["ApproximateNumberOfMessagesDelayed"] == "0"
}

// DelayedBodies lists the bodies of the messages delayed in a queue, from
// fauxqs's inspection endpoint: a receive cannot see a parked message for
// 15 minutes.
func DelayedBodies(t testing.TB, queueURL string) []string {
	t.Helper()
	name := queueURL[strings.LastIndexByte(queueURL, '/')+1:]
	resp, err := http.Get(SQSEndpoint(t) + "/_fauxqs/queues/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v struct {
		Messages struct {
			Delayed []struct {
				Body string `json:"body"`
			} `json:"delayed"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || resp.StatusCode != 200 {
		t.Fatalf("inspect %s: %d %v", queueURL, resp.StatusCode, err)
	}
	var out []string
	for _, m := range v.Messages.Delayed {
		out = append(out, m.Body)
	}
	return out
}

// Proxy sits between a client and a real server to count calls and inject
// faults. Hook sees each request (its X-Amz-Target operation and body)
// and may answer it itself, or let it through, possibly rewritten.
type Proxy struct {
	URL string

	mu     sync.Mutex
	calls  map[string]int
	hook   func(op string, body []byte) (newBody []byte, reply *Reply)
	after  func(op string, reqBody, respBody []byte) []byte
	lose   func(op string, body []byte) bool
	target *url.URL
	// delay holds every call this long before it is passed on (SetDelay);
	// inFlight and maxInFlight count the calls being handled, per operation.
	delay       time.Duration
	inFlight    map[string]int
	maxInFlight map[string]int
}

// Reply is a canned answer.
type Reply struct {
	Status int
	Body   string
}

// NewProxy starts a proxy in front of endpoint.
func NewProxy(t testing.TB, endpoint string) *Proxy {
	u, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{calls: map[string]int{}, target: u, inFlight: map[string]int{}, maxInFlight: map[string]int{}}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ModifyResponse = func(resp *http.Response) error {
		p.mu.Lock()
		after, lose := p.after, p.lose
		p.mu.Unlock()
		reqBody, _ := resp.Request.Context().Value(bodyKey{}).([]byte)
		if lose != nil && lose(opOf(resp.Request), reqBody) {
			// The call reached the server and took effect; its reply is
			// replaced by a server error, as when a reply is lost.
			resp.Body.Close()
			b := []byte("<Error><Code>InternalError</Code><Message>the reply was lost (test proxy)</Message></Error>")
			resp.StatusCode, resp.Status = 500, "500 Internal Server Error"
			resp.Body = io.NopCloser(bytes.NewReader(b))
			resp.ContentLength = int64(len(b))
			resp.Header.Del("Content-Length")
			resp.Header.Del("ETag")
			return nil
		}
		if after == nil {
			return nil
		}
		op := opOf(resp.Request)
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		b = after(op, reqBody, b)
		resp.Body = io.NopCloser(bytes.NewReader(b))
		resp.ContentLength = int64(len(b))
		resp.Header.Del("Content-Length")
		resp.Header.Del("X-Amz-Crc32")
		return nil
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		original := body
		op := opOf(r)
		p.mu.Lock()
		p.calls[op]++
		hook, delay := p.hook, p.delay
		p.inFlight[op]++
		p.maxInFlight[op] = max(p.maxInFlight[op], p.inFlight[op])
		p.mu.Unlock()
		defer func() {
			p.mu.Lock()
			p.inFlight[op]--
			p.mu.Unlock()
		}()
		if delay > 0 {
			select {
			case <-time.After(delay):
			case <-r.Context().Done():
				return
			}
		}
		if hook != nil {
			nb, reply := hook(op, body)
			if reply != nil {
				w.Header().Set("Content-Type", "application/x-amz-json-1.0")
				w.WriteHeader(reply.Status)
				io.WriteString(w, reply.Body)
				return
			}
			if nb != nil {
				body = nb
			}
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		r = r.WithContext(context.WithValue(r.Context(), bodyKey{}, original))
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

type bodyKey struct{}

func opOf(r *http.Request) string {
	if r.Header.Get("X-Amz-Target") == "" {
		return s3Op(r)
	}
	op := r.Header.Get("X-Amz-Target")
	if i := strings.LastIndexByte(op, '.'); i >= 0 {
		op = op[i+1:]
	}
	return op
}

// SetHook replaces the request hook.
func (p *Proxy) SetHook(h func(op string, body []byte) ([]byte, *Reply)) {
	p.mu.Lock()
	p.hook = h
	p.mu.Unlock()
}

// SetLoseReply makes the proxy forward every call for which lose(op) is
// true and answer it with a 500 instead of the server's reply: the call
// took effect, the caller cannot know it.
func (p *Proxy) SetLoseReply(lose func(op string) bool) {
	if lose == nil {
		p.SetLoseReplyOf(nil)
		return
	}
	p.SetLoseReplyOf(func(op string, _ []byte) bool { return lose(op) })
}

// LoseFirstReplies loses the replies of the first n calls of op (each
// call took effect; the caller gets a 500); lost says how many it has lost
// so far.
func (p *Proxy) LoseFirstReplies(op string, n int) (lost func() int) {
	var mu sync.Mutex
	count := 0
	p.SetLoseReply(func(o string) bool {
		mu.Lock()
		defer mu.Unlock()
		if o == op && count < n {
			count++
			return true
		}
		return false
	})
	return func() int {
		mu.Lock()
		defer mu.Unlock()
		return count
	}
}

// SetLoseReplyOf is SetLoseReply deciding on the request body too (as the
// client sent it): every attempt of one call carries the same body.
func (p *Proxy) SetLoseReplyOf(lose func(op string, body []byte) bool) {
	p.mu.Lock()
	p.lose = lose
	p.mu.Unlock()
}

// SetAfter replaces the response rewriter; it sees the request body as
// the client sent it (before any rewrite by the hook).
func (p *Proxy) SetAfter(a func(op string, reqBody, respBody []byte) []byte) {
	p.mu.Lock()
	p.after = a
	p.mu.Unlock()
}

// SetDelay holds every call d before passing it on, as a distant server's
// round trip would (0: none).
func (p *Proxy) SetDelay(d time.Duration) {
	p.mu.Lock()
	p.delay = d
	p.mu.Unlock()
}

// MaxInFlight returns the most calls of op that were being handled at once.
func (p *Proxy) MaxInFlight(op string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.maxInFlight[op]
}

// Calls returns the number of calls per operation so far.
func (p *Proxy) Calls() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]int, len(p.calls))
	for k, v := range p.calls {
		out[k] = v
	}
	return out
}

// AWSJSONError is the body of an AWS JSON protocol error.
func AWSJSONError(typ, msg string) string { return localaws.AWSJSONError(typ, msg) }

// s3Op names the S3 REST operations the fault tests inject into.
func s3Op(r *http.Request) string {
	switch {
	case r.Header.Get("X-Amz-Copy-Source") != "":
		return "CopyObject"
	case r.Method == http.MethodPost && r.URL.Query().Has("delete"):
		return "DeleteObjects"
	case r.Method == http.MethodDelete:
		return "DeleteObject"
	case r.Method == http.MethodGet && r.URL.Query().Has("list-type"):
		return "ListObjectsV2"
	case r.Method == http.MethodGet:
		return "GetObject"
	case r.Method == http.MethodHead:
		return "HeadObject"
	case r.Method == http.MethodPut:
		return "PutObject"
	}
	return r.Method
}

// SendBatchRequest is a SendMessageBatch request as a Proxy hook sees it
// (the AWS JSON protocol body).
type SendBatchRequest struct {
	QueueUrl string
	Entries  []SendBatchEntry
}

// SendBatchEntry is one entry of a SendBatchRequest.
type SendBatchEntry struct {
	Id                     string
	MessageBody            string
	DelaySeconds           int
	MessageGroupId         string
	MessageDeduplicationId string
	MessageAttributes      map[string]struct {
		DataType    string
		StringValue *string
		BinaryValue []byte
	}
}

// ParseSendBatch reads a SendMessageBatch request body; a body it cannot
// read fails the test (t may be nil: then it reads as no entries).
func ParseSendBatch(t testing.TB, body []byte) SendBatchRequest {
	var in SendBatchRequest
	if err := json.Unmarshal(body, &in); err != nil && t != nil {
		t.Errorf("SendMessageBatch request %q: %v", body, err)
	}
	return in
}
