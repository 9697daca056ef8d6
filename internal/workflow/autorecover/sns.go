package autorecover

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
)

// Publisher is the SNS call a notification needs.
type Publisher interface {
	Publish(ctx context.Context, in *sns.PublishInput, optFns ...func(*sns.Options)) (*sns.PublishOutput, error)
}

// SNSNotifier is Config.Notify publishing to topic: one message a pass,
// MessageStructure json (the text for e-mail and by default, the report's
// JSON for SQS, Lambda and HTTP subscribers). client is called for the
// SNS client at the first notification only.
func SNSNotifier(client func(ctx context.Context) (Publisher, error), topic string) func(context.Context, Notification) (string, error) {
	return func(ctx context.Context, n Notification) (string, error) {
		c, err := client(ctx)
		if err != nil {
			return "", err
		}
		body, err := n.Body()
		if err != nil {
			return "", err
		}
		out, err := c.Publish(ctx, &sns.PublishInput{TopicArn: aws.String(topic), Subject: aws.String(n.Subject),
			Message: aws.String(body), MessageStructure: aws.String("json")})
		if err != nil {
			return "", err
		}
		return aws.ToString(out.MessageId), nil
	}
}
