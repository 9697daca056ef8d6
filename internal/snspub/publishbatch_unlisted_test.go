package snspub_test

import (
	"context"
	"regexp"
	"testing"

	"github.com/deadletter/deadletter/internal/recovery"
	"github.com/deadletter/deadletter/internal/snspub"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// A PublishBatch reply (HTTP 200) that lists one entry neither among the
// Successful nor among the Failed: SNS never said it published that
// message. The break: an entry not listed as failed was counted as
// published, so recover deleted its object with a notification that was
// never confirmed (a truncated or non-conforming reply; an SNS-compatible
// server that answers only for what it did). What must hold: that message
// fails (its object stays, a re-run publishes again), it is not counted,
// and it counts as of unknown outcome; the listed ones are counted.
func TestPublishBatchEntryTheReplyDoesNotListIsNotPublished(t *testing.T) {
	topics := testsupport.NewNotificationTopics(t)
	proxy := testsupport.NewProxy(t, testsupport.SQSEndpoint(t))
	second := regexp.MustCompile(`<member><Id>1</Id>.*?</member>`)
	proxy.SetAfter(func(_ string, _, resp []byte) []byte { return second.ReplaceAll(resp, nil) })
	p, err := snspub.New(testsupport.SNSClientAt(proxy.URL), topics.Topics)
	if err != nil {
		t.Fatal(err)
	}
	msgs := [][]byte{[]byte(`{"n":0}`), []byte(`{"n":1}`), []byte(`{"n":2}`)}
	errs := p.PublishBatch(context.Background(), recovery.TopicGranule, msgs)
	if errs[0] != nil || errs[2] != nil {
		t.Fatalf("listed as published, yet failed: %v", errs)
	}
	if errs[1] == nil {
		t.Fatal("a message the reply does not list was taken as published")
	}
	if c, u := p.Counts(), p.Unconfirmed(); c != (recovery.PublishCounts{Granule: 2}) || u != (recovery.PublishCounts{Granule: 1}) {
		t.Fatalf("counts %+v, unconfirmed %+v; want 2 published, 1 of unknown outcome", c, u)
	}
}
