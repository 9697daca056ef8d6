package snspub_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/deadletter/deadletter/internal/recovery"
	"github.com/deadletter/deadletter/internal/snspub"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// PublishBatch sends a topic's notifications in calls of at most 10 and
// 256 KiB; a message SNS could never take is not sent and fails alone;
// what the topic received is what was counted. (A standard topic keeps no
// order, and fauxqs delivers a batch's 10th entry second: the messages are
// compared as sets.)
func TestPublishBatchSplitsByCountAndSizeInOrder(t *testing.T) {
	topics := testsupport.NewNotificationTopics(t)
	proxy := testsupport.NewProxy(t, testsupport.SQSEndpoint(t))
	p, err := snspub.New(testsupport.SNSClientAt(proxy.URL), topics.Topics)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var small [][]byte
	for i := range 23 {
		small = append(small, []byte(fmt.Sprintf(`{"event":"Update","record":{"granuleId":"G%d"}}`, i)))
	}
	if errs := p.PublishBatch(ctx, recovery.TopicGranule, small); slices.ContainsFunc(errs, func(e error) bool { return e != nil }) {
		t.Fatalf("errors %v", errs)
	}
	if calls := proxy.Calls()["POST"]; calls != 3 {
		t.Errorf("23 notifications in %d calls, want 3", calls)
	}
	var want []string
	for _, m := range small {
		want = append(want, string(m))
	}
	if got := topics.Messages(t, recovery.TopicGranule); !slices.Equal(testsupport.SortedKeys(got), testsupport.SortedKeys(want)) {
		t.Fatalf("received %q, want %q", got, want)
	}

	// Three of 100 KiB: 300 KiB is more than one call may carry. One of
	// 300 KiB is more than SNS takes at all.
	big := func(c byte, n int) []byte { return []byte(`"` + strings.Repeat(string(c), n) + `"`) }
	large := [][]byte{big('a', 100<<10), big('b', 300<<10), big('c', 100<<10), big('d', 100<<10)}
	before := proxy.Calls()["POST"]
	errs := p.PublishBatch(ctx, recovery.TopicPdr, large)
	if errs[0] != nil || errs[2] != nil || errs[3] != nil || !errors.Is(errs[1], recovery.ErrNotificationRejected) {
		t.Fatalf("errors %v, want only the second rejected", errs)
	}
	if calls := proxy.Calls()["POST"] - before; calls != 2 {
		t.Errorf("three of 100 KiB in %d calls, want 2", calls)
	}
	if got := testsupport.SortedKeys(topics.Messages(t, recovery.TopicPdr)); len(got) != 3 || got[0][1] != 'a' || got[1][1] != 'c' || got[2][1] != 'd' {
		t.Errorf("received %d, or the rejected one among them", len(got))
	}
	if c := p.Counts(); c != (recovery.PublishCounts{Granule: 23, Pdr: 3}) {
		t.Errorf("counts %+v", c)
	}
}

// A batch call whose reply is lost may have published every message in
// it: each counts as unconfirmed. A call SNS refuses fails each message,
// and none is counted.
func TestPublishBatchCountsALostReplyForEachMessage(t *testing.T) {
	topics := testsupport.NewNotificationTopics(t)
	proxy := testsupport.NewProxy(t, testsupport.SQSEndpoint(t))
	lost := 0
	proxy.SetLoseReply(func(string) bool { lost++; return lost == 1 })
	p, err := snspub.New(testsupport.SNSClientAt(proxy.URL), topics.Topics)
	if err != nil {
		t.Fatal(err)
	}
	msgs := [][]byte{[]byte(`{"n":1}`), []byte(`{"n":2}`), []byte(`{"n":3}`)}
	if errs := p.PublishBatch(context.Background(), recovery.TopicExecution, msgs); slices.ContainsFunc(errs, func(e error) bool { return e != nil }) {
		t.Fatalf("errors %v", errs)
	}
	got := len(topics.Messages(t, recovery.TopicExecution))
	if c, u := p.Counts(), p.Unconfirmed(); c != (recovery.PublishCounts{Execution: 3}) || u != (recovery.PublishCounts{Execution: 3}) || got != 6 {
		t.Fatalf("counts %+v, unconfirmed %+v, received %d; want 3, 3, 6", c, u, got)
	}

	bad := topics.Topics
	bad.Pdr += "-gone"
	q, err := snspub.New(topics.SNS, bad)
	if err != nil {
		t.Fatal(err)
	}
	errs := q.PublishBatch(context.Background(), recovery.TopicPdr, msgs)
	for i, e := range errs {
		if e == nil || !strings.Contains(e.Error(), "PublishBatch") {
			t.Errorf("message %d: %v, want the call's error", i, e)
		}
	}
	if c := q.Counts(); c != (recovery.PublishCounts{}) {
		t.Errorf("counted %+v of a refused call", c)
	}
}
