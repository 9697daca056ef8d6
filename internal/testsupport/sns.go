package testsupport

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/awsconfig"
	"github.com/deadletter/deadletter/internal/recovery"
	"github.com/deadletter/deadletter/internal/snspub"
)

// SNS on fauxqs: the test SQS server also serves SNS, and delivers what is
// published to a topic to the SQS queues subscribed to it. Subscriptions
// here keep the SNS envelope (RawMessageDelivery false, SNS's default):
// each SQS body is {"Type":"Notification","TopicArn":...,"Message":...}, so
// a test sees which topic a message was published to, not only that it
// arrived.

// SNSClientAt returns an SNS client for an endpoint, built as the CLI
// builds its own.
func SNSClientAt(endpoint string) *sns.Client {
	return awsconfig.SNS(AWSConfig(), awsconfig.Settings{EndpointURL: endpoint})
}

// SNSClient returns a client for the test SNS server (fauxqs).
func SNSClient(t testing.TB) *sns.Client { return SNSClientAt(SQSEndpoint(t)) }

// NewTopic creates a uniquely named topic, deleted after the test, and
// returns its ARN.
func NewTopic(t testing.TB, c *sns.Client, prefix string) string {
	t.Helper()
	out, err := c.CreateTopic(context.Background(), &sns.CreateTopicInput{Name: aws.String(prefix + RandomHex(4))})
	if err != nil {
		t.Fatalf("create topic: %v", err)
	}
	arn := aws.ToString(out.TopicArn)
	t.Cleanup(func() { c.DeleteTopic(context.Background(), &sns.DeleteTopicInput{TopicArn: aws.String(arn)}) })
	return arn
}

// SubscribeQueue subscribes an SQS queue to a topic, envelope kept.
func SubscribeQueue(t testing.TB, snsc *sns.Client, sqsc *sqs.Client, topicARN, queueURL string) {
	t.Helper()
	ctx := context.Background()
	attrs, err := sqsc.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(queueURL),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
	if err != nil {
		t.Fatalf("queue ARN of %s: %v", queueURL, err)
	}
	if _, err := snsc.Subscribe(ctx, &sns.SubscribeInput{TopicArn: aws.String(topicARN), Protocol: aws.String("sqs"),
		Endpoint:   aws.String(attrs.Attributes[string(types.QueueAttributeNameQueueArn)]),
		Attributes: map[string]string{"RawMessageDelivery": "false"}}); err != nil {
		t.Fatalf("subscribe %s to %s: %v", queueURL, topicARN, err)
	}
}

// Published drains a queue subscribed to topicARN and returns the SNS
// Messages it received, in order. It fails the test for a body that is not
// a notification of that topic.
func Published(t testing.TB, sqsc *sqs.Client, queueURL, topicARN string) []string {
	t.Helper()
	var out []string
	for _, m := range Drain(t, sqsc, queueURL, time.Second) {
		env := gjson.Parse(aws.ToString(m.Body))
		if env.Get("Type").String() != "Notification" || env.Get("TopicArn").String() != topicARN {
			t.Fatalf("queue %s: not a notification of %s: %s", queueURL, topicARN, aws.ToString(m.Body))
		}
		out = append(out, env.Get("Message").String())
	}
	return out
}

// NotificationTopics are the three notification topics on fauxqs, each
// with a queue subscribed to it.
type NotificationTopics struct {
	Topics snspub.Topics
	SNS    *sns.Client
	SQS    *sqs.Client
	queues map[recovery.Topic]string
}

// NewNotificationTopics creates the three topics and their queues.
func NewNotificationTopics(t testing.TB) *NotificationTopics {
	t.Helper()
	n := &NotificationTopics{SNS: SNSClient(t), SQS: SQSClient(t), queues: map[recovery.Topic]string{}}
	arns := map[recovery.Topic]string{}
	for _, topic := range recovery.Topics {
		arns[topic] = NewTopic(t, n.SNS, "dl-"+string(topic)+"-")
		n.queues[topic] = NewQueue(t, n.SQS, "dl-"+string(topic)+"-sub-", false)
		SubscribeQueue(t, n.SNS, n.SQS, arns[topic], n.queues[topic])
	}
	n.Topics = snspub.Topics{Execution: arns[recovery.TopicExecution], Granule: arns[recovery.TopicGranule], Pdr: arns[recovery.TopicPdr]}
	return n
}

// Publisher returns an snspub.Publisher to the topics.
func (n *NotificationTopics) Publisher(t testing.TB) *snspub.Publisher {
	t.Helper()
	p, err := snspub.New(n.SNS, n.Topics)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Messages drains the topic's queue: the messages published since the
// last call, in order.
func (n *NotificationTopics) Messages(t testing.TB, topic recovery.Topic) []string {
	t.Helper()
	return Published(t, n.SQS, n.queues[topic], n.Topics.ARN(topic))
}

// Keys drains the topic's queue and returns the notifications' keys
// (NotificationKey), in order.
func (n *NotificationTopics) Keys(t testing.TB, topic recovery.Topic) []string {
	t.Helper()
	var out []string
	for _, m := range n.Messages(t, topic) {
		out = append(out, NotificationKey(topic, m))
	}
	return out
}
