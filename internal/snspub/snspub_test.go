package snspub_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/sns/types"

	"github.com/deadletter/deadletter/internal/recovery"
	"github.com/deadletter/deadletter/internal/snspub"
	"github.com/deadletter/deadletter/internal/testsupport"
)

func TestPublishesEachTopicToItsARN(t *testing.T) {
	topics := testsupport.NewNotificationTopics(t)
	p := topics.Publisher(t)
	ctx := context.Background()
	sent := map[recovery.Topic][]string{
		recovery.TopicExecution: {`{"arn":"a1","status":"completed"}`, `{"arn":"a2","status":"running"}`},
		recovery.TopicGranule:   {`{"event":"Update","record":{"granuleId":"G1","collectionId":"C___1","status":"failed"}}`},
		recovery.TopicPdr:       {`{"pdrName":"P.PDR","status":"running"}`, `{"pdrName":"P.PDR","status":"completed"}`, `{"pdrName":"Q.PDR","status":"failed"}`},
	}
	for _, topic := range recovery.Topics {
		for _, m := range sent[topic] {
			if err := p.Publish(ctx, topic, []byte(m)); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, topic := range recovery.Topics {
		if got := topics.Messages(t, topic); !slices.Equal(got, sent[topic]) {
			t.Fatalf("%s topic received %q, want %q", topic, got, sent[topic])
		}
	}
	if c := p.Counts(); c != (recovery.PublishCounts{Execution: 2, Granule: 1, Pdr: 3}) {
		t.Fatalf("counts %+v", c)
	}
}

func TestMissingTopicFailsAndIsNotCounted(t *testing.T) {
	topics := testsupport.NewNotificationTopics(t)
	bad := topics.Topics
	bad.Granule = bad.Granule + "-gone"
	p, err := snspub.New(topics.SNS, bad)
	if err != nil {
		t.Fatal(err)
	}
	err = p.Publish(context.Background(), recovery.TopicGranule, []byte(`{}`))
	var nf *types.NotFoundException
	if !errors.As(err, &nf) {
		t.Fatalf("want NotFound, got %v", err)
	}
	if c := p.Counts(); c != (recovery.PublishCounts{}) {
		t.Fatalf("counted a failed publish: %+v", c)
	}
}

func TestTopicsAllOrNone(t *testing.T) {
	env := map[string]string{"execution_sns_topic_arn": "arn:aws:sns:us-east-1:1:e", "pdr_sns_topic_arn": "arn:aws:sns:us-east-1:1:p"}
	topics := snspub.TopicsFromEnv(func(k string) string { return env[k] })
	if err := topics.Validate(); err == nil || !strings.Contains(err.Error(), "missing granule_sns_topic_arn") {
		t.Fatalf("one missing: %v", err)
	}
	if _, err := snspub.New(nil, topics); err == nil {
		t.Fatal("New accepted two topics of three")
	}
	if !(snspub.Topics{}).None() || topics.None() {
		t.Fatal("None")
	}
	topics.Granule = "arn:aws:sqs:us-east-1:1:q"
	if err := topics.Validate(); err == nil || !strings.Contains(err.Error(), "granule_sns_topic_arn") {
		t.Fatalf("an SQS ARN: %v", err)
	}
	topics.Granule = "arn:aws:sns:us-east-1:1:g"
	if err := topics.Validate(); err != nil {
		t.Fatal(err)
	}
}

// The client the publisher is given keeps the SDK's retryer: a throttled
// publish is retried, a missing topic is not.
func TestThrottlingIsRetried(t *testing.T) {
	topics := testsupport.NewNotificationTopics(t)
	proxy := testsupport.NewProxy(t, testsupport.SQSEndpoint(t))
	throttled := 0
	proxy.SetHook(func(op string, body []byte) ([]byte, *testsupport.Reply) {
		if strings.Contains(string(body), "Action=Publish") && throttled < 2 {
			throttled++
			return nil, &testsupport.Reply{Status: 400, Body: `<ErrorResponse><Error><Type>Sender</Type><Code>Throttling</Code><Message>Rate exceeded</Message></Error></ErrorResponse>`}
		}
		return nil, nil
	})
	client := testsupport.SNSClientAt(proxy.URL)
	p, err := snspub.New(client, topics.Topics)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Publish(context.Background(), recovery.TopicPdr, []byte(`{"pdrName":"P","status":"failed"}`)); err != nil {
		t.Fatalf("publish after two throttled attempts: %v", err)
	}
	if throttled != 2 || !slices.Equal(topics.Keys(t, recovery.TopicPdr), []string{"P|failed"}) {
		t.Fatalf("throttled %d", throttled)
	}
}
