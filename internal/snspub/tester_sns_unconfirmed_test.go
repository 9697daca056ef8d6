package snspub_test

import (
	"context"
	"strings"
	"testing"

	"github.com/deadletter/deadletter/internal/recovery"
	"github.com/deadletter/deadletter/internal/snspub"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// Unconfirmed counts the attempts SNS may have published although the
// publisher never heard so: a lost reply (a server error in its place)
// counts, a refusal (throttling, a 400) does not. What the topic received
// is Counts plus Unconfirmed here, where the lost reply's message was
// published.
func TestTesterSNSUnconfirmedCountsLostRepliesNotRefusals(t *testing.T) {
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
// colon) is refused when the topics are read, before anything is written,
// instead of failing each publish after its write.
func TestTesterSNSTopicNameIsChecked(t *testing.T) {
	ok := snspub.Topics{Execution: "arn:aws:sns:us-east-1:1:e", Granule: "arn:aws:sns:us-east-1:1:g_1-x", Pdr: "arn:aws:sns:us-east-1:1:p.fifo"}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"arn:aws:sns:us-east-1:1:g ", "arn:aws:sns:us-east-1:1:g\n", "arn:aws:sns:us-east-1:1:a/b", "arn:aws:sns:us-east-1:1:a:b", "arn:aws:sns:us-east-1:1:"} {
		topics := ok
		topics.Granule = bad
		if err := topics.Validate(); err == nil || !strings.Contains(err.Error(), "granule_sns_topic_arn") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
