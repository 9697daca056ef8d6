// Package cumulusapi is a client for the two Cumulus API endpoints dead
// letter recovery uses: POST /deadLetterArchive/recoverCumulusMessages,
// which starts Cumulus's own recovery as an async operation, and
// GET /asyncOperations/{id}, which reports on it.
package cumulusapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Client calls one Cumulus API with a bearer token. The token is sent in
// the Authorization header only and never appears in an error.
type Client struct {
	BaseURL string
	Token   string
	HTTP    *http.Client
	// Attempts bounds the tries of a call answered 5xx or not answered
	// (default 4); Backoff is the first wait between them, doubling
	// (default 1 s).
	Attempts int
	Backoff  time.Duration
}

// AsyncOperation is Cumulus's async operation record (the fields used).
type AsyncOperation struct {
	ID            string `json:"id"`
	Status        string `json:"status"` // RUNNING, SUCCEEDED, TASK_FAILED, RUNNER_FAILED
	Output        string `json:"output"` // JSON text, once done
	Description   string `json:"description"`
	OperationType string `json:"operationType"`
	TaskArn       string `json:"taskArn"`
}

// Done reports whether the operation has ended.
func (o AsyncOperation) Done() bool { return o.Status != "" && o.Status != "RUNNING" }

// Succeeded reports whether the operation ended well.
func (o AsyncOperation) Succeeded() bool { return o.Status == "SUCCEEDED" }

// RecoveryOutput is the output of a finished dead letter recovery.
type RecoveryOutput struct {
	ProcessingSucceededKeys []string `json:"processingSucceededKeys"`
	ProcessingFailedKeys    []string `json:"processingFailedKeys"`
}

// ErrUnauthorized: the API refused the token (401 or 403).
var ErrUnauthorized = errors.New("the Cumulus API refused the token")

// NotStarted reports whether an error of RecoverCumulusMessages means the
// API did not start anything: the token was refused, the request was
// answered 4xx, or it provably never left this machine (the host did not
// resolve, the connection was refused). After a 5xx, a lost answer or a
// timeout nobody can say.
func NotStarted(err error) bool {
	if errors.Is(err, ErrUnauthorized) {
		return true
	}
	var se *StatusError
	if errors.As(err, &se) && se.Status < 500 {
		return true
	}
	return neverSent(err)
}

// neverSent: the request could not have reached a server (no address, or
// no connection).
func neverSent(err error) bool {
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return true
	}
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// UnreachableError: the API could not be reached, or its answer was lost.
type UnreachableError struct {
	URL, Op string
	Err     error
}

func (e *UnreachableError) Error() string {
	why := e.Err.Error()
	var dns *net.DNSError
	var op *net.OpError
	switch {
	case errors.As(e.Err, &dns):
		why = fmt.Sprintf("the host %q does not resolve", dns.Name)
	case errors.As(e.Err, &op) && op.Err != nil:
		why = op.Err.Error()
	case isTimeout(e.Err):
		why = "no answer (timed out)"
	}
	return fmt.Sprintf("cannot reach the Cumulus API at %s (%s): %s; check --via-api and the network", e.URL, e.Op, why)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// Check makes one cheap authenticated call (the first async operation of
// the list), so that an API that cannot be reached or a token it refuses
// is found before anything is staged.
func (c *Client) Check(ctx context.Context) error {
	var out json.RawMessage
	return c.call(ctx, http.MethodGet, "/asyncOperations?limit=1", nil, http.StatusOK, &out)
}

// StatusError is an answer other than the one expected.
type StatusError struct {
	Op     string
	Status int
	Body   string // the start of the body, for the operator
}

func (e *StatusError) Error() string {
	switch {
	case e.Status == http.StatusTooManyRequests:
		return fmt.Sprintf("%s: the Cumulus API is throttling the requests (HTTP 429: %s); wait and run again", e.Op, e.Body)
	case e.Status == http.StatusNotFound:
		return fmt.Sprintf("%s: the Cumulus API has no such resource (HTTP 404: %s); check --via-api (the API's base URL, with its stage)", e.Op, e.Body)
	}
	return fmt.Sprintf("%s: the Cumulus API answered HTTP %d: %s", e.Op, e.Status, e.Body)
}

// RecoverCumulusMessages starts Cumulus's recovery of the objects under
// path in bucket. Cumulus answers 202 with the async operation.
//
// Only a 503 (the service says it did not process the request) is retried:
// after another 5xx, a lost answer or a timeout the operation may have
// started, and a second start would recover the same objects twice. Such an
// error is not NotStarted, and the caller leaves the objects to Cumulus.
func (c *Client) RecoverCumulusMessages(ctx context.Context, bucket, path string) (AsyncOperation, error) {
	body, _ := json.Marshal(map[string]string{"bucket": bucket, "path": path})
	var op AsyncOperation
	err := c.call(ctx, http.MethodPost, "/deadLetterArchive/recoverCumulusMessages", body, http.StatusAccepted, &op)
	if err == nil && op.ID == "" {
		err = fmt.Errorf("start the recovery: the API answered 202 without an async operation id")
	}
	return op, err
}

// AsyncOperation reads an async operation.
func (c *Client) AsyncOperation(ctx context.Context, id string) (AsyncOperation, error) {
	var op AsyncOperation
	err := c.call(ctx, http.MethodGet, "/asyncOperations/"+url.PathEscape(id), nil, http.StatusOK, &op)
	return op, err
}

func (c *Client) call(ctx context.Context, method, path string, body []byte, want int, out any) error {
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 60 * time.Second}
	}
	attempts := c.Attempts
	if attempts <= 0 {
		attempts = 4
	}
	wait := c.Backoff
	if wait <= 0 {
		wait = time.Second
	}
	op := method + " " + path
	var last error
	for i := 0; i < attempts; i++ {
		if i > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-t.C:
			}
			wait *= 2
		}
		req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(c.BaseURL, "/")+path, bytes.NewReader(body))
		if err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		req.Header.Set("Authorization", "Bearer "+c.Token)
		req.Header.Set("Accept", "application/json")
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := hc.Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			last = &UnreachableError{URL: c.BaseURL, Op: op, Err: err}
			if method == http.MethodPost && !neverSent(err) { // it may have arrived: not retried
				return last
			}
			continue
		}
		b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		switch {
		case err != nil:
			last = fmt.Errorf("%s: reading the answer: %w", op, err)
			continue
		case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
			return fmt.Errorf("%s: %w (HTTP %d: %s); check --token-file or CUMULUS_API_TOKEN", op, ErrUnauthorized, resp.StatusCode, c.snippet(b))
		case resp.StatusCode >= 500 && method != http.MethodPost:
			last = &StatusError{Op: op, Status: resp.StatusCode, Body: c.snippet(b)}
			continue
		case resp.StatusCode == http.StatusServiceUnavailable:
			// "Not processed": the one 5xx a start may be retried after.
			last = &StatusError{Op: op, Status: resp.StatusCode, Body: c.snippet(b)}
			continue
		case resp.StatusCode >= 500: // a start may have happened: not retried
			return &StatusError{Op: op, Status: resp.StatusCode, Body: c.snippet(b)}
		case resp.StatusCode != want:
			return &StatusError{Op: op, Status: resp.StatusCode, Body: c.snippet(b)}
		}
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("%s: the answer is not the JSON expected: %w", op, err)
		}
		return nil
	}
	return fmt.Errorf("%w (after %d tries)", last, attempts)
}

// snippet is the start of a body, on one line, with the token blanked out
// (a gateway may quote the request's headers).
func (c *Client) snippet(b []byte) string {
	s := string(b)
	if c.Token != "" {
		s = strings.ReplaceAll(s, c.Token, "[token]")
	}
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
