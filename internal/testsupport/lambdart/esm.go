package lambdart

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/deadletter/deadletter/internal/testsupport"
)

// ESM is the SQS event-source mapping, as Lambda's SQS poller runs it.
type ESM struct {
	Client            *sqs.Client
	QueueURL          string
	QueueARN          string // eventSourceARN; looked up from the queue when empty
	BatchSize         int    // default 10
	VisibilityTimeout int32  // seconds, for the receive; default 30
	// ReportBatchItemFailures: when true, delete all but the reported
	// itemIdentifiers; when false, delete all on success, none on error.
	ReportBatchItemFailures bool
	// WaitTimeSeconds is the receive's long-poll wait; default 1.
	WaitTimeSeconds int32
}

// PollResult is one poll: the batch received, what was deleted, and the
// invocation.
type PollResult struct {
	Received int
	Deleted  int
	Failed   int // received and not deleted: they come back after the visibility timeout
	// Invocation is the function's outcome (zero when nothing was received).
	Invocation Invocation
	// Err is the invocation's error (ErrCrashed, ErrTimedOut,
	// ErrInitFailed, ...), or why the whole batch counted as failed
	// (ErrBadBatchResponse), or a delete that failed.
	Err error
	// FailedIDs are the message ids not deleted.
	FailedIDs []string
	// Event is the event the function was given.
	Event events.SQSEvent
}

// ErrBadBatchResponse: with ReportBatchItemFailures, the function's
// response was not valid JSON, or named an itemIdentifier that is empty or
// not in the batch; Lambda then counts the whole batch as failed.
var ErrBadBatchResponse = errors.New("invalid batch item failures response: the whole batch failed")

// DrainStats sums the PollResults of a Drain.
type DrainStats struct {
	Polls          int
	Invocations    int
	Received       int
	Deleted        int
	Failed         int
	Crashes        int
	Timeouts       int
	FunctionErrors int
	BadResponses   int
	Results        []PollResult // the polls that received something
}

func (e *ESM) batchSize() int {
	if e.BatchSize <= 0 {
		return 10
	}
	return e.BatchSize
}

func (e *ESM) visibility() int32 {
	if e.VisibilityTimeout <= 0 {
		return 30
	}
	return e.VisibilityTimeout
}

func (e *ESM) arn(ctx context.Context) (string, error) {
	if e.QueueARN != "" {
		return e.QueueARN, nil
	}
	out, err := e.Client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(e.QueueURL), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
	if err != nil {
		return "", fmt.Errorf("queue ARN of %s: %w", e.QueueURL, err)
	}
	e.QueueARN = out.Attributes[string(types.QueueAttributeNameQueueArn)]
	return e.QueueARN, nil
}

// lambdaAttributes are the message system attributes Lambda puts in an
// SQS record's "attributes" (the FIFO ones and AWSTraceHeader only when
// present).
var lambdaAttributes = []string{
	"ApproximateReceiveCount", "SentTimestamp", "SenderId", "ApproximateFirstReceiveTimestamp",
	"SequenceNumber", "MessageGroupId", "MessageDeduplicationId", "AWSTraceHeader", "DeadLetterQueueSourceArn",
}

// Receive takes up to BatchSize messages (several receives when BatchSize
// is above 10, stopping at the first empty one), with a short wait.
func (e *ESM) Receive(ctx context.Context) ([]types.Message, error) {
	wait := e.WaitTimeSeconds
	if wait <= 0 {
		wait = 1
	}
	var msgs []types.Message
	for len(msgs) < e.batchSize() {
		out, err := e.Client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:                    aws.String(e.QueueURL),
			MaxNumberOfMessages:         int32(min(10, e.batchSize()-len(msgs))),
			VisibilityTimeout:           e.visibility(),
			WaitTimeSeconds:             wait,
			MessageAttributeNames:       []string{"All"},
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		})
		if err != nil {
			return msgs, fmt.Errorf("receive from %s: %w", e.QueueURL, err)
		}
		if len(out.Messages) == 0 {
			break
		}
		msgs = append(msgs, out.Messages...)
		wait = 0
	}
	return msgs, nil
}

// Event builds the events.SQSEvent Lambda gives the function for msgs.
func (e *ESM) Event(ctx context.Context, msgs []types.Message) (events.SQSEvent, error) {
	arn, err := e.arn(ctx)
	if err != nil {
		return events.SQSEvent{}, err
	}
	return NewSQSEvent(arn, e.Client.Options().Region, msgs), nil
}

// NewSQSEvent builds the event Lambda makes of received SQS messages:
// messageId, receiptHandle, body, the system attributes, messageAttributes
// in Lambda's shape (stringValue or binaryValue, the two lists always
// present, dataType), md5OfBody, md5OfMessageAttributes (when the message
// has attributes), eventSource "aws:sqs", eventSourceARN and awsRegion.
func NewSQSEvent(queueARN, region string, msgs []types.Message) events.SQSEvent {
	ev := events.SQSEvent{Records: make([]events.SQSMessage, 0, len(msgs))}
	for _, m := range msgs {
		rec := events.SQSMessage{
			MessageId:              aws.ToString(m.MessageId),
			ReceiptHandle:          aws.ToString(m.ReceiptHandle),
			Body:                   aws.ToString(m.Body),
			Md5OfBody:              aws.ToString(m.MD5OfBody),
			Md5OfMessageAttributes: aws.ToString(m.MD5OfMessageAttributes),
			Attributes:             map[string]string{},
			MessageAttributes:      map[string]events.SQSMessageAttribute{},
			EventSource:            "aws:sqs",
			EventSourceARN:         queueARN,
			AWSRegion:              region,
		}
		for _, k := range lambdaAttributes {
			if v, ok := m.Attributes[k]; ok {
				rec.Attributes[k] = v
			}
		}
		for k, v := range m.MessageAttributes {
			a := events.SQSMessageAttribute{
				StringValue:      v.StringValue,
				BinaryValue:      v.BinaryValue,
				StringListValues: v.StringListValues,
				BinaryListValues: v.BinaryListValues,
				DataType:         aws.ToString(v.DataType),
			}
			if a.StringListValues == nil {
				a.StringListValues = []string{}
			}
			if a.BinaryListValues == nil {
				a.BinaryListValues = [][]byte{}
			}
			rec.MessageAttributes[k] = a
		}
		ev.Records = append(ev.Records, rec)
	}
	return ev
}

// BodiesEvent is an SQS event of made-up records with these bodies, for
// benchmarks that measure the function without SQS in the way.
func BodiesEvent(queueARN, region string, bodies ...string) events.SQSEvent {
	msgs := make([]types.Message, len(bodies))
	now := strconv.FormatInt(time.Now().UnixMilli(), 10)
	for i, b := range bodies {
		msgs[i] = types.Message{
			MessageId: aws.String(newRequestID()), ReceiptHandle: aws.String(testsupport.RandomHex(32)), Body: aws.String(b),
			Attributes: map[string]string{"ApproximateReceiveCount": "1", "SentTimestamp": now,
				"SenderId": "AIDAIENQZJOLO23YVJ4VO", "ApproximateFirstReceiveTimestamp": now},
		}
	}
	return NewSQSEvent(queueARN, region, msgs)
}

// PollOnce receives up to BatchSize messages, invokes the function with
// them, and deletes what succeeded: with ReportBatchItemFailures all but
// the reported itemIdentifiers, otherwise all. On a function error, a
// crash or a timeout nothing is deleted (the batch comes back after the
// visibility timeout). A response that is not valid JSON, or names an
// empty or unknown itemIdentifier, fails the whole batch, as in Lambda.
//
// The returned error is about SQS or ctx; the invocation's own failure is
// in PollResult.Err.
func (e *ESM) PollOnce(ctx context.Context, rt *Runtime) (PollResult, error) {
	msgs, err := e.Receive(ctx)
	if err != nil {
		return PollResult{}, err
	}
	if len(msgs) == 0 {
		return PollResult{}, nil
	}
	ev, err := e.Event(ctx, msgs)
	if err != nil {
		return PollResult{}, err
	}
	res := PollResult{Received: len(msgs), Event: ev}
	payload, err := json.Marshal(ev)
	if err != nil {
		return res, err
	}
	inv, ierr := rt.Invoke(ctx, payload)
	res.Invocation = inv
	if ierr != nil && ctx.Err() != nil {
		return res, ierr
	}
	failed := map[string]bool{}
	switch {
	case ierr != nil:
		res.Err = ierr
		failAll(failed, ev)
	case inv.FunctionError != nil:
		res.Err = inv.FunctionError
		failAll(failed, ev)
	case e.ReportBatchItemFailures:
		if err := batchFailures(inv.Payload, ev, failed); err != nil {
			res.Err = err
			failAll(failed, ev)
		}
	}
	var del []types.DeleteMessageBatchRequestEntry
	for i, r := range ev.Records {
		if failed[r.MessageId] {
			res.FailedIDs = append(res.FailedIDs, r.MessageId)
			continue
		}
		del = append(del, types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: aws.String(r.ReceiptHandle)})
	}
	res.Failed = len(res.FailedIDs)
	for start := 0; start < len(del); start += 10 {
		out, err := e.Client.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(e.QueueURL), Entries: del[start:min(start+10, len(del))]})
		if err != nil {
			return res, fmt.Errorf("delete from %s: %w", e.QueueURL, err)
		}
		res.Deleted += len(out.Successful)
		if len(out.Failed) > 0 && res.Err == nil {
			res.Err = fmt.Errorf("delete from %s: %d entries failed: %s", e.QueueURL, len(out.Failed), aws.ToString(out.Failed[0].Message))
		}
	}
	return res, nil
}

func failAll(failed map[string]bool, ev events.SQSEvent) {
	for _, r := range ev.Records {
		failed[r.MessageId] = true
	}
}

// batchFailures reads an events.SQSEventResponse as Lambda does: empty,
// null, or an empty/null list is a complete success; invalid JSON or an
// empty or unknown itemIdentifier fails the whole batch.
func batchFailures(payload []byte, ev events.SQSEvent, failed map[string]bool) error {
	if len(payload) == 0 {
		return nil
	}
	var resp *events.SQSEventResponse
	if err := json.Unmarshal(payload, &resp); err != nil {
		return fmt.Errorf("%w: %v", ErrBadBatchResponse, err)
	}
	if resp == nil {
		return nil
	}
	inBatch := map[string]bool{}
	for _, r := range ev.Records {
		inBatch[r.MessageId] = true
	}
	for _, f := range resp.BatchItemFailures {
		if f.ItemIdentifier == "" || !inBatch[f.ItemIdentifier] {
			return fmt.Errorf("%w: itemIdentifier %q is not a message of the batch", ErrBadBatchResponse, f.ItemIdentifier)
		}
		failed[f.ItemIdentifier] = true
	}
	return nil
}

// Drain polls until nothing has been received for idle (so make idle
// longer than VisibilityTimeout to see failed batches come back and be
// retried), or ctx ends. It stops early with an error wrapping
// ErrInitFailed when the function cannot start, since it never will.
func (e *ESM) Drain(ctx context.Context, rt *Runtime, idle time.Duration) (DrainStats, error) {
	var s DrainStats
	last := time.Now()
	for {
		if err := ctx.Err(); err != nil {
			return s, err
		}
		res, err := e.PollOnce(ctx, rt)
		s.Polls++
		if err != nil {
			return s, err
		}
		if res.Received == 0 {
			if time.Since(last) >= idle {
				return s, nil
			}
			continue
		}
		last = time.Now()
		s.Results = append(s.Results, res)
		s.Received += res.Received
		s.Deleted += res.Deleted
		s.Failed += res.Failed
		if res.Invocation.N > 0 {
			s.Invocations++
		}
		switch {
		case errors.Is(res.Err, ErrInitFailed):
			return s, res.Err
		case errors.Is(res.Err, ErrCrashed):
			s.Crashes++
		case errors.Is(res.Err, ErrTimedOut):
			s.Timeouts++
		case errors.Is(res.Err, ErrBadBatchResponse):
			s.BadResponses++
		case res.Invocation.FunctionError != nil:
			s.FunctionErrors++
		}
	}
}
