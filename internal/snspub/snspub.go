// Package snspub publishes the write core's notifications
// (recovery.Notifier) to the three SNS topics Cumulus v21 publishes to:
// execution_sns_topic_arn, granule_sns_topic_arn, pdr_sns_topic_arn.
package snspub

import (
	"context"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/arn"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sns/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/deadletter/deadletter/internal/recovery"
)

// Topics are the ARNs of the three topics.
type Topics struct {
	Execution, Granule, Pdr string
}

// TopicsFromEnv reads v21's environment names (execution_sns_topic_arn,
// granule_sns_topic_arn, pdr_sns_topic_arn), without the white space
// around a value (a trailing newline or space would pass for part of the
// topic's name, and every publish would fail NotFound).
func TopicsFromEnv(getenv func(string) string) Topics {
	get := func(t recovery.Topic) string { return strings.TrimSpace(getenv(t.EnvVar())) }
	return Topics{Execution: get(recovery.TopicExecution), Granule: get(recovery.TopicGranule), Pdr: get(recovery.TopicPdr)}
}

// ARN is the topic's ARN ("" when not set).
func (t Topics) ARN(topic recovery.Topic) string {
	switch topic {
	case recovery.TopicExecution:
		return t.Execution
	case recovery.TopicGranule:
		return t.Granule
	case recovery.TopicPdr:
		return t.Pdr
	}
	return ""
}

// None reports whether no topic is set.
func (t Topics) None() bool { return t == Topics{} }

// Missing names the topics that are not set (their environment names).
func (t Topics) Missing() []string {
	var out []string
	for _, topic := range recovery.Topics {
		if t.ARN(topic) == "" {
			out = append(out, topic.EnvVar())
		}
	}
	return out
}

// TopicError names the topic variable that is missing or not an ARN.
type TopicError struct {
	EnvVar, Value, Problem string
}

func (e *TopicError) Error() string { return "SNS topics: " + e.Problem }

// topicName is what SNS allows a topic's name to be (compiled on first
// use: a bounded repeat compiles into a long program, which every command
// paid for at start-up).
var topicName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_-]{1,256}(\.fifo)?$`) })

// Validate checks that all three are set and are SNS topic ARNs (with a
// name SNS allows: letters, digits, - and _), of standard topics: all
// three or none, as v21 requires each one it publishes to. Its error is a
// *TopicError.
func (t Topics) Validate() error {
	if m := t.Missing(); len(m) > 0 {
		return &TopicError{EnvVar: m[0], Problem: fmt.Sprintf("all three topic ARNs are needed, or none; missing %s", strings.Join(m, ", "))}
	}
	for _, topic := range recovery.Topics {
		a, err := arn.Parse(t.ARN(topic))
		if err != nil || a.Service != "sns" || !topicName().MatchString(a.Resource) {
			return &TopicError{EnvVar: topic.EnvVar(), Value: t.ARN(topic),
				Problem: fmt.Sprintf("%s %q is not an SNS topic ARN (arn:aws:sns:<region>:<account>:<name>)", topic.EnvVar(), t.ARN(topic))}
		}
		if strings.HasSuffix(a.Resource, ".fifo") {
			// Publish needs a MessageGroupId there, which v21 never sends:
			// every publish would fail, after its write.
			return &TopicError{EnvVar: topic.EnvVar(), Value: t.ARN(topic),
				Problem: fmt.Sprintf("%s %q is a FIFO topic; Cumulus publishes to standard topics", topic.EnvVar(), t.ARN(topic))}
		}
	}
	return nil
}

// API is the part of the SNS client the publisher uses.
type API interface {
	Publish(ctx context.Context, in *sns.PublishInput, optFns ...func(*sns.Options)) (*sns.PublishOutput, error)
	PublishBatch(ctx context.Context, in *sns.PublishBatchInput, optFns ...func(*sns.Options)) (*sns.PublishBatchOutput, error)
}

// Publisher is a recovery.Notifier on SNS. It is safe for concurrent use.
// Each topic is published to in its own region (the ARN's).
// Each publish is one Publish call with the SDK's retries (the client's
// retryer: throttling and server errors are retried, a missing topic or
// denied access is not); v21 retries with p-retry instead.
type Publisher struct {
	client API
	topics Topics

	// AttemptTimeout bounds each attempt (DefaultAttemptTimeout from New):
	// an endpoint that takes the request and never answers would otherwise
	// hold the publish, and the object in flight, for ever (the SDK's HTTP
	// client waits for a reply without limit, and recover's writes run on a
	// context an interrupt does not cancel). An attempt that times out is
	// of unknown outcome (Unconfirmed).
	AttemptTimeout time.Duration

	mu          sync.Mutex
	counts      recovery.PublishCounts
	unconfirmed recovery.PublishCounts
}

var _ recovery.Notifier = (*Publisher)(nil)

// DefaultAttemptTimeout is a Publisher's AttemptTimeout: far above what
// one Publish takes.
const DefaultAttemptTimeout = 30 * time.Second

// New returns a publisher to the topics, which must all be set
// (Topics.Validate).
func New(client API, topics Topics) (*Publisher, error) {
	if err := topics.Validate(); err != nil {
		return nil, err
	}
	return &Publisher{client: client, topics: topics, AttemptTimeout: DefaultAttemptTimeout}, nil
}

// MaxMessageBytes is the largest Message SNS publishes (256 KiB, in bytes
// of UTF-8); a longer one is refused with InvalidParameter ("Message too
// long"), retries or not.
const MaxMessageBytes = 256 << 10

// Publish sends message as the SNS Message of one notification to the
// topic's ARN, as publishSnsMessageWithRetry does. A message longer than
// MaxMessageBytes is not sent: its error wraps
// recovery.ErrNotificationRejected.
func (p *Publisher) Publish(ctx context.Context, topic recovery.Topic, message []byte) error {
	if err := p.Check(topic, message); err != nil {
		return err
	}
	topicARN := p.topics.ARN(topic)
	unknown := 0
	_, err := p.client.Publish(ctx, &sns.PublishInput{TopicArn: aws.String(topicARN), Message: aws.String(string(message))},
		inRegionOf(topicARN), countUnknownAttempts(&unknown, p.AttemptTimeout))
	p.mu.Lock()
	for range unknown {
		p.unconfirmed.Add(topic)
	}
	if err == nil {
		p.counts.Add(topic)
	}
	p.mu.Unlock()
	if err != nil {
		return fmt.Errorf("SNS Publish to %s: %w", topicARN, err)
	}
	return nil
}

// MaxBatchEntries and MaxBatchBytes are SNS's limits on one PublishBatch:
// 10 messages, 256 KiB in all.
const (
	MaxBatchEntries = 10
	MaxBatchBytes   = 256 << 10
)

var _ recovery.BatchNotifier = (*Publisher)(nil)

// PublishBatch publishes messages to the topic in PublishBatch calls of at
// most MaxBatchEntries messages and MaxBatchBytes, in order, with the
// SDK's retries, and returns one error per message (nil: published). A
// call that fails fails each of its messages; a message SNS lists as
// failed fails alone, and so does one its reply does not list as
// published (counted as unconfirmed). An attempt whose outcome is unknown counts each of
// its messages as unconfirmed. Each message is checked as Publish checks
// it; one that fails the check is not sent.
func (p *Publisher) PublishBatch(ctx context.Context, topic recovery.Topic, messages [][]byte) []error {
	errs := make([]error, len(messages))
	topicARN := p.topics.ARN(topic)
	var batch []int // indexes into messages
	size := 0
	send := func() {
		if len(batch) == 0 {
			return
		}
		entries := make([]types.PublishBatchRequestEntry, len(batch))
		for i, m := range batch {
			entries[i] = types.PublishBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), Message: aws.String(string(messages[m]))}
		}
		unknown := 0
		out, err := p.client.PublishBatch(ctx, &sns.PublishBatchInput{TopicArn: aws.String(topicARN), PublishBatchRequestEntries: entries},
			inRegionOf(topicARN), countUnknownAttempts(&unknown, p.AttemptTimeout))
		// A message is published only when the reply lists it among the
		// Successful: one it lists nowhere was not confirmed (its outcome
		// is unknown, as a lost reply's is).
		failed, published := map[string]string{}, map[string]bool{}
		if err == nil {
			for _, f := range out.Failed {
				failed[aws.ToString(f.Id)] = fmt.Sprintf("%s: %s", aws.ToString(f.Code), aws.ToString(f.Message))
			}
			for _, s := range out.Successful {
				published[aws.ToString(s.Id)] = true
			}
		}
		p.mu.Lock()
		for range unknown * len(batch) {
			p.unconfirmed.Add(topic)
		}
		for i, m := range batch {
			id := strconv.Itoa(i)
			switch why, ok := failed[id]; {
			case err != nil:
				errs[m] = fmt.Errorf("SNS PublishBatch to %s: %w", topicARN, err)
			case ok:
				errs[m] = fmt.Errorf("SNS PublishBatch to %s: the message was refused: %s", topicARN, why)
			case !published[id]:
				errs[m] = fmt.Errorf("SNS PublishBatch to %s: the reply lists the message neither as published nor as failed", topicARN)
				p.unconfirmed.Add(topic)
			default:
				p.counts.Add(topic)
			}
		}
		p.mu.Unlock()
		batch, size = batch[:0], 0
	}
	for i, m := range messages {
		if err := p.Check(topic, m); err != nil {
			errs[i] = err
			continue
		}
		if len(batch) == MaxBatchEntries || size+len(m) > MaxBatchBytes {
			send()
		}
		batch = append(batch, i)
		size += len(m)
	}
	send()
	return errs
}

// Check is what Publish checks before sending: a topic ARN, and a message
// SNS can take (not longer than MaxMessageBytes: that error wraps
// recovery.ErrNotificationRejected).
func (p *Publisher) Check(topic recovery.Topic, message []byte) error {
	topicARN := p.topics.ARN(topic)
	if topicARN == "" {
		return fmt.Errorf("no topic ARN for %s notifications", topic)
	}
	if len(message) > MaxMessageBytes {
		return fmt.Errorf("SNS Publish to %s: %w: %d bytes, more than SNS's limit of %d", topicARN, recovery.ErrNotificationRejected, len(message), MaxMessageBytes)
	}
	return nil
}

var _ recovery.Checker = (*Publisher)(nil)

// inRegionOf sends the call to the topic's region: SNS publishes to a
// topic only through its own region's endpoint (InvalidParameter:
// TopicArn otherwise), whatever region the AWS settings name. v21 runs in
// its topics' region.
func inRegionOf(topicARN string) func(*sns.Options) {
	return func(o *sns.Options) {
		if a, err := arn.Parse(topicARN); err == nil && a.Region != "" {
			o.Region = a.Region
		}
	}
}

// countUnknownAttempts counts, in *n, the attempts of one call that were
// sent and failed without a reply saying SNS refused them (no reply, or a
// server error): SNS may have published them. When such an attempt is
// retried, the topic may receive the notification twice; when the call
// fails, once or more although it is not counted as published. An attempt
// that never left (no credentials, a signing error, a connection refused)
// is not counted.
//
// Each attempt is bounded by timeout (none when 0).
func countUnknownAttempts(n *int, timeout time.Duration) func(*sns.Options) {
	return func(o *sns.Options) {
		o.APIOptions = append(o.APIOptions, func(s *middleware.Stack) error {
			// The deserialize step runs once per attempt (the retries are in
			// the finalize step, before it), around the send itself.
			return s.Deserialize.Add(middleware.DeserializeMiddlewareFunc("DeadletterUnknownAttempts",
				func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
					if timeout > 0 {
						var cancel context.CancelFunc
						ctx, cancel = context.WithTimeout(ctx, timeout)
						defer cancel()
					}
					out, md, err := next.HandleDeserialize(ctx, in)
					var status interface{ HTTPStatusCode() int }
					var op *net.OpError
					// A reply below 500 is SNS's refusal; a status of 0 is no reply.
					refused := errors.As(err, &status) && status.HTTPStatusCode() > 0 && status.HTTPStatusCode() < 500 ||
						errors.As(err, &op) && op.Op == "dial"
					if err != nil && !refused {
						*n++
					}
					return out, md, err
				}), middleware.Before)
		})
	}
}

// Unconfirmed counts, per topic, the publish attempts whose outcome is
// unknown (the reply was lost, or was a server error): SNS may have
// delivered each of them besides what Counts counts. A topic has received
// at least Counts and at most Counts plus Unconfirmed.
func (p *Publisher) Unconfirmed() recovery.PublishCounts {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.unconfirmed
}

// Counts are the notifications published so far, per topic.
func (p *Publisher) Counts() recovery.PublishCounts {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.counts
}
