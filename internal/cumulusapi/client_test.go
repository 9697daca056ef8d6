package cumulusapi

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/testsupport/fakecumulus"
)

func fake(t *testing.T) *fakecumulus.Server {
	dir := t.TempDir()
	return fakecumulus.New(t, "s3cr3t-token", "demo", func(string) archive.Store {
		s, err := archive.NewLocal(dir)
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestUnauthorizedNamesNoToken(t *testing.T) {
	f := fake(t)
	c := &Client{BaseURL: f.URL, Token: "wrong-token-value", Backoff: time.Millisecond}
	_, err := c.RecoverCumulusMessages(context.Background(), "b", "demo/x/")
	if !errors.Is(err, ErrUnauthorized) || strings.Contains(err.Error(), "wrong-token-value") {
		t.Fatalf("err = %v", err)
	}
	if len(f.Posts()) != 0 {
		t.Fatal("an operation was started without a valid token")
	}
}

// A 503 is retried; one operation is started and polled to its end.
func TestStartRetries5xxAndPolls(t *testing.T) {
	f := fake(t)
	f.FailPosts = 2
	f.RunningPolls = 2
	c := &Client{BaseURL: f.URL, Token: "s3cr3t-token", Backoff: time.Millisecond}
	op, err := c.RecoverCumulusMessages(context.Background(), "b", "demo/dead-letter-archive/staging/")
	if err != nil {
		t.Fatal(err)
	}
	if p := f.Posts(); len(p) != 1 || p[0]["bucket"] != "b" || p[0]["path"] != "demo/dead-letter-archive/staging/" {
		t.Fatalf("posts %v", p)
	}
	var states []string
	for !op.Done() {
		if op, err = c.AsyncOperation(context.Background(), op.ID); err != nil {
			t.Fatal(err)
		}
		states = append(states, op.Status)
	}
	if strings.Join(states, ",") != "RUNNING,RUNNING,SUCCEEDED" || !op.Succeeded() {
		t.Fatalf("states %v, %+v", states, op)
	}
	f.FailPosts = 9
	c.Attempts = 3
	if _, err := c.RecoverCumulusMessages(context.Background(), "b", "p/"); err == nil || !strings.Contains(err.Error(), "HTTP 503") || !strings.Contains(err.Error(), "after 3 tries") {
		t.Fatalf("err = %v", err)
	}
	if _, err := c.AsyncOperation(context.Background(), "op-99"); err == nil || !strings.Contains(err.Error(), "HTTP 404") {
		t.Fatalf("missing operation: %v", err)
	}
}
