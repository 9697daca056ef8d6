package sqsmove

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// Queue is what the mover knows about a queue.
type Queue struct {
	URL               string
	ARN               string
	FIFO              bool
	Visible           int64 // ApproximateNumberOfMessages
	InFlight          int64 // ApproximateNumberOfMessagesNotVisible
	Delayed           int64 // ApproximateNumberOfMessagesDelayed
	VisibilityTimeout int64 // seconds, the queue default
	RedrivePolicy     string
}

// Account is the account id in the queue's ARN (or URL), for the identity
// banner: it costs no extra permission.
func (q Queue) Account() string {
	if parts := strings.Split(q.ARN, ":"); len(parts) == 6 {
		return parts[4]
	}
	if u, err := url.Parse(q.URL); err == nil {
		if parts := strings.Split(strings.Trim(u.Path, "/"), "/"); len(parts) == 2 {
			return parts[0]
		}
	}
	return ""
}

// Name is the queue's name, the last element of its URL.
func Name(queueURL string) string {
	return queueURL[strings.LastIndex(queueURL, "/")+1:]
}

// IsFIFO reports whether a queue URL names a FIFO queue (SQS requires the
// .fifo suffix on FIFO queue names).
func IsFIFO(queueURL string) bool { return strings.HasSuffix(queueURL, ".fifo") }

// ResolveURL accepts a queue URL or a queue name.
func ResolveURL(ctx context.Context, api API, urlOrName string) (string, error) {
	if strings.HasPrefix(urlOrName, "https://") || strings.HasPrefix(urlOrName, "http://") {
		return urlOrName, nil
	}
	out, err := api.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(urlOrName)})
	if err != nil {
		return "", fmt.Errorf("find queue %q: %w", urlOrName, err)
	}
	return aws.ToString(out.QueueUrl), nil
}

// Describe reads a queue's attributes (depth counts are approximate, as
// SQS reports them).
func Describe(ctx context.Context, api API, queueURL string) (Queue, error) {
	out, err := api.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(queueURL),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll},
	})
	if err != nil {
		return Queue{}, fmt.Errorf("read attributes of queue %s: %w", queueURL, err)
	}
	a := out.Attributes
	num := func(k types.QueueAttributeName) int64 {
		n, _ := strconv.ParseInt(a[string(k)], 10, 64)
		return n
	}
	return Queue{
		URL:               queueURL,
		ARN:               a[string(types.QueueAttributeNameQueueArn)],
		FIFO:              a[string(types.QueueAttributeNameFifoQueue)] == "true" || IsFIFO(queueURL),
		Visible:           num(types.QueueAttributeNameApproximateNumberOfMessages),
		InFlight:          num(types.QueueAttributeNameApproximateNumberOfMessagesNotVisible),
		Delayed:           num(types.QueueAttributeNameApproximateNumberOfMessagesDelayed),
		VisibilityTimeout: num(types.QueueAttributeNameVisibilityTimeout),
		RedrivePolicy:     a[string(types.QueueAttributeNameRedrivePolicy)],
	}, nil
}

// SameQueue reports whether two queue URLs name the same queue; hosts may
// differ in spelling (sqs.REGION.amazonaws.com vs queue.amazonaws.com), the
// account and name may not.
func SameQueue(a, b string) bool {
	pa, pb := queuePath(a), queuePath(b)
	return pa != "" && pa == pb
}

func queuePath(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.Path == "" {
		return strings.TrimRight(u, "/")
	}
	return strings.Trim(p.Path, "/")
}

// CheckQueueURL refuses what cannot be an SQS queue URL to send to as it
// is: not http(s), no host, no queue path, a query or a fragment (a queue
// name or an ARN where the URL belongs, say). The processors check their
// queue variables with it at cold start.
func CheckQueueURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" ||
		strings.Trim(u.Path, "/") == "" || u.RawQuery != "" || u.Fragment != "" {
		return errors.New("not an SQS queue URL")
	}
	return nil
}
