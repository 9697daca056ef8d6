package snspub_test

import (
	"context"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/recovery"
	"github.com/deadletter/deadletter/internal/snspub"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// Unconfirmed counts the attempts SNS may have published although the
// publisher never heard so: a lost reply (a server error in its place)
// counts, a refusal (throttling, a 400) does not. What the topic received
// is Counts plus Unconfirmed here, where the lost reply's message was
// published.
func TestUnconfirmedCountsLostRepliesNotRefusals(t *testing.T) {
	topics := testsupport.NewNotificationTopics(t)
	proxy := testsupport.NewProxy(t, testsupport.SQSEndpoint(t))
	throttled, lost := 0, 0
	proxy.SetHook(func(op string, body []byte) ([]byte, *testsupport.Reply) {
		if strings.Contains(string(body), "Action=Publish") && throttled < 1 {
			throttled++
			return nil, &testsupport.Reply{Status: 400, Body: `<ErrorResponse><Error><Type>Sender</Type><Code>Throttling</Code><Message>Rate exceeded</Message></Error></ErrorResponse>`}
		}
		return nil, nil
	})
	proxy.SetLoseReply(func(string) bool { lost++; return lost == 1 })
	p, err := snspub.New(testsupport.SNSClientAt(proxy.URL), topics.Topics)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Publish(context.Background(), recovery.TopicGranule, []byte(`{"event":"Update","record":{"granuleId":"G"}}`)); err != nil {
		t.Fatal(err)
	}
	got := len(topics.Messages(t, recovery.TopicGranule))
	if c, u := p.Counts(), p.Unconfirmed(); c != (recovery.PublishCounts{Granule: 1}) || u != (recovery.PublishCounts{Granule: 1}) || got != 2 {
		t.Fatalf("counts %+v, unconfirmed %+v, received %d; want 1, 1, 2 (throttled %d)", c, u, got, throttled)
	}
}

// A topic ARN whose name SNS could not hold (white space, a slash, a
// colon), or a FIFO topic (Publish needs a MessageGroupId there, which v21
// never sends), is refused when the topics are read, before anything is written,
// instead of failing each publish after its write.
func TestTopicNameIsChecked(t *testing.T) {
	ok := snspub.Topics{Execution: "arn:aws:sns:us-east-1:1:e", Granule: "arn:aws:sns:us-east-1:1:g_1-x", Pdr: "arn:aws:sns:us-east-1:1:p"}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"arn:aws:sns:us-east-1:1:g ", "arn:aws:sns:us-east-1:1:g\n", "arn:aws:sns:us-east-1:1:a/b", "arn:aws:sns:us-east-1:1:a:b", "arn:aws:sns:us-east-1:1:",
		"arn:aws:sns:us-east-1:1:g.fifo"} {
		topics := ok
		topics.Granule = bad
		if err := topics.Validate(); err == nil || !strings.Contains(err.Error(), "granule_sns_topic_arn") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// A publish that never left (the connection refused) is not a possible
// duplicate: SNS cannot have published it.
func TestRefusedConnectionIsNotUnconfirmed(t *testing.T) {
	topics := testsupport.NewNotificationTopics(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	p, err := snspub.New(testsupport.SNSClientAt("http://"+addr), topics.Topics)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Publish(context.Background(), recovery.TopicPdr, []byte(`{}`)); err == nil {
		t.Fatal("published through a closed port")
	}
	if c, u := p.Counts(), p.Unconfirmed(); c != (recovery.PublishCounts{}) || u != (recovery.PublishCounts{}) {
		t.Fatalf("counts %+v, unconfirmed %+v; want none", c, u)
	}
}

// The connection cut after SNS received the publish (the reply never
// comes back: the SDK sees no status at all). SNS published it; the SDK's
// retry publishes it again. The attempt without a reply is a possible
// duplicate, as the topic's two copies show. (The break: an error without
// a reply carries status 0, which was taken for a refusal below 500.)
func TestReplyCutIsUnconfirmed(t *testing.T) {
	topics := testsupport.NewNotificationTopics(t)
	proxy := testsupport.NewDropReplyProxy(t, testsupport.SQSEndpoint(t), func(_ string, nth int, body []byte) bool {
		return nth == 1 && strings.Contains(string(body), "Action=Publish")
	})
	p, err := snspub.New(testsupport.SNSClientAt(proxy.URL), topics.Topics)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Publish(context.Background(), recovery.TopicExecution, []byte(`{"arn":"a","status":"completed"}`)); err != nil {
		t.Fatal(err)
	}
	got := len(topics.Messages(t, recovery.TopicExecution))
	if c, u := p.Counts(), p.Unconfirmed(); c != (recovery.PublishCounts{Execution: 1}) || u != (recovery.PublishCounts{Execution: 1}) || got != 2 || proxy.Dropped("") != 1 {
		t.Fatalf("counts %+v, unconfirmed %+v, received %d, dropped %d; want 1, 1, 2, 1", c, u, got, proxy.Dropped(""))
	}
}

// An SNS endpoint that takes the request and never answers (a black hole
// behind a load balancer, a half-open connection). The break: the SDK's
// HTTP client waits for a reply without limit, so the publish, and in
// recover the object in flight (whose context an interrupt does not
// cancel), hung for ever. What must hold: the publish ends with an error,
// unpublished, and its attempts count as of unknown outcome.
func TestEndpointThatNeverAnswersFailsThePublish(t *testing.T) {
	topics := testsupport.NewNotificationTopics(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var held []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range held {
			c.Close()
		}
		mu.Unlock()
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
			go io.Copy(io.Discard, c) // read the request, never answer
		}
	}()
	p, err := snspub.New(testsupport.SNSClientAt("http://"+ln.Addr().String()), topics.Topics)
	if err != nil {
		t.Fatal(err)
	}
	if p.AttemptTimeout != snspub.DefaultAttemptTimeout || p.AttemptTimeout <= 0 {
		t.Fatalf("attempt timeout %v", p.AttemptTimeout)
	}
	p.AttemptTimeout = 200 * time.Millisecond
	if err := p.Publish(context.Background(), recovery.TopicPdr, []byte(`{}`)); err == nil {
		t.Fatal("published to an endpoint that never answers")
	}
	if c, u := p.Counts(), p.Unconfirmed(); c != (recovery.PublishCounts{}) || u.Pdr == 0 {
		t.Fatalf("counts %+v, unconfirmed %+v; want none published, the attempts unconfirmed", c, u)
	}
}
