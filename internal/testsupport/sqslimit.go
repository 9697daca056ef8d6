package testsupport

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"sync"
	"testing"
)

// InFlightLimitProxy stands in front of the test SQS server and enforces
// SQS's in-flight limit, which the test server does not: once Limit
// messages are received and not yet deleted or made visible again, a
// ReceiveMessage is answered 403 OverLimit, as SQS answers past about
// 120,000 (a standard queue) or 20,000 (FIFO). It is hand-written, not
// toxiproxy (weighed for issue 40): the limit follows SQS's own state
// (messages received, deleted, made visible again, by receipt handle),
// read from the API's JSON, which a byte-level TCP proxy does not see.
type InFlightLimitProxy struct {
	URL   string
	Limit int

	mu       sync.Mutex
	inFlight map[string]bool   // message ids
	byHandle map[string]string // receipt handle -> message id
	refused  int
}

// NewInFlightLimitProxy starts the proxy in front of endpoint (an http://
// URL of the test SQS server).
func NewInFlightLimitProxy(t testing.TB, endpoint string, limit int) *InFlightLimitProxy {
	u, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	p := &InFlightLimitProxy{Limit: limit, inFlight: map[string]bool{}, byHandle: map[string]string{}}
	rp := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		op := r.Header.Get("X-Amz-Target")
		if op == "AmazonSQS.ReceiveMessage" {
			p.mu.Lock()
			full := len(p.inFlight) >= p.Limit
			if full {
				p.refused++
			}
			p.mu.Unlock()
			if full {
				w.Header().Set("Content-Type", "application/x-amz-json-1.0")
				w.Header().Set("x-amzn-query-error", "AWS.SimpleQueueService.OverLimit;Sender")
				w.Header().Set("X-Amzn-RequestId", "overlimit-request")
				w.WriteHeader(http.StatusForbidden)
				io.WriteString(w, AWSJSONError("com.amazonaws.sqs#OverLimit", "Too many messages in flight ("+strconv.Itoa(p.Limit)+")."))
				return
			}
		}
		rec := httptest.NewRecorder()
		rp.ServeHTTP(rec, r)
		p.observe(op, body, rec.Body.Bytes(), rec.Code)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes())
	}))
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

// observe keeps the in-flight set: received messages join it; deleted
// ones, and ones made visible again (visibility 0), leave it.
func (p *InFlightLimitProxy) observe(op string, req, resp []byte, code int) {
	if code != http.StatusOK {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch op {
	case "AmazonSQS.ReceiveMessage":
		var out struct {
			Messages []struct{ MessageId, ReceiptHandle string }
		}
		if json.Unmarshal(resp, &out) == nil {
			for _, m := range out.Messages {
				p.inFlight[m.MessageId] = true
				p.byHandle[m.ReceiptHandle] = m.MessageId
			}
		}
	case "AmazonSQS.DeleteMessage":
		var in struct{ ReceiptHandle string }
		if json.Unmarshal(req, &in) == nil {
			delete(p.inFlight, p.byHandle[in.ReceiptHandle])
		}
	case "AmazonSQS.ChangeMessageVisibility":
		var in struct {
			ReceiptHandle     string
			VisibilityTimeout int
		}
		if json.Unmarshal(req, &in) == nil && in.VisibilityTimeout == 0 {
			delete(p.inFlight, p.byHandle[in.ReceiptHandle])
		}
	case "AmazonSQS.DeleteMessageBatch", "AmazonSQS.ChangeMessageVisibilityBatch":
		var in struct {
			Entries []struct {
				Id, ReceiptHandle string
				VisibilityTimeout *int
			}
		}
		var out struct{ Successful []struct{ Id string } }
		if json.Unmarshal(req, &in) != nil || json.Unmarshal(resp, &out) != nil {
			return
		}
		ok := map[string]bool{}
		for _, s := range out.Successful {
			ok[s.Id] = true
		}
		for _, e := range in.Entries {
			if ok[e.Id] && (op == "AmazonSQS.DeleteMessageBatch" || (e.VisibilityTimeout != nil && *e.VisibilityTimeout == 0)) {
				delete(p.inFlight, p.byHandle[e.ReceiptHandle])
			}
		}
	}
}

// Refused is how many receives were answered OverLimit.
func (p *InFlightLimitProxy) Refused() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.refused
}
