// Package sqsmove is the SQS adapter of pushdlq: it receives every message
// of a queue and holds it invisible while it is worked on, sends batches
// with per-entry failure handling, deletes only what was sent, releases the
// rest, and journals each step so that a killed run can be resumed. It is
// written from the data-loss bugs of the peer tools: attributes are always
// requested and copied, FIFO group ids are kept, batch results are checked
// entry by entry, and nothing is deleted before it is safely elsewhere.
package sqsmove

import (
	"context"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// API is the part of the SQS client the mover uses.
type API interface {
	GetQueueUrl(context.Context, *sqs.GetQueueUrlInput, ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
	GetQueueAttributes(context.Context, *sqs.GetQueueAttributesInput, ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
	ReceiveMessage(context.Context, *sqs.ReceiveMessageInput, ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	SendMessageBatch(context.Context, *sqs.SendMessageBatchInput, ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
	DeleteMessageBatch(context.Context, *sqs.DeleteMessageBatchInput, ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
	ChangeMessageVisibilityBatch(context.Context, *sqs.ChangeMessageVisibilityBatchInput, ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error)
}

// Message is one SQS message as exported and spooled. Its JSON form is the
// export format that `pushdlq replay --from-file` reads back.
type Message struct {
	MessageID         string               `json:"message_id"`
	ReceiptHandle     string               `json:"receipt_handle,omitempty"` // spool only
	Body              string               `json:"body"`
	MD5OfBody         string               `json:"md5_of_body,omitempty"`
	MessageAttributes map[string]Attribute `json:"message_attributes"`
	Attributes        map[string]string    `json:"attributes"` // system attributes (SentTimestamp, MessageGroupId, ...)
}

// Attribute is one message attribute.
type Attribute struct {
	DataType    string  `json:"data_type"`
	StringValue *string `json:"string_value,omitempty"`
	BinaryValue []byte  `json:"binary_value,omitempty"` // base64 in JSON
}

func fromSQS(m types.Message) Message {
	out := Message{
		MessageID:     aws.ToString(m.MessageId),
		ReceiptHandle: aws.ToString(m.ReceiptHandle),
		Body:          aws.ToString(m.Body),
		MD5OfBody:     aws.ToString(m.MD5OfBody),
		Attributes:    m.Attributes,
	}
	if out.Attributes == nil {
		out.Attributes = map[string]string{}
	}
	out.MessageAttributes = make(map[string]Attribute, len(m.MessageAttributes))
	for k, v := range m.MessageAttributes {
		out.MessageAttributes[k] = Attribute{DataType: aws.ToString(v.DataType), StringValue: v.StringValue, BinaryValue: v.BinaryValue}
	}
	return out
}

// FromLambda is a record of a Lambda SQS event as a Message: the event
// spells message attributes stringValue/binaryValue/dataType, and its
// attributes are the system attributes (MessageGroupId, SentTimestamp,
// ...). The list values of the event's shape are not used by SQS and are
// dropped.
func FromLambda(m events.SQSMessage) Message {
	out := Message{
		MessageID:     m.MessageId,
		ReceiptHandle: m.ReceiptHandle,
		Body:          m.Body,
		MD5OfBody:     m.Md5OfBody,
		Attributes:    m.Attributes,
	}
	if out.Attributes == nil {
		out.Attributes = map[string]string{}
	}
	out.MessageAttributes = make(map[string]Attribute, len(m.MessageAttributes))
	for k, v := range m.MessageAttributes {
		out.MessageAttributes[k] = Attribute{DataType: v.DataType, StringValue: v.StringValue, BinaryValue: v.BinaryValue}
	}
	return out
}

// sendAttributes copies the user attributes for a send: dropping them is
// the data loss most peer tools shipped.
func (m *Message) sendAttributes() map[string]types.MessageAttributeValue {
	if len(m.MessageAttributes) == 0 {
		return nil
	}
	out := make(map[string]types.MessageAttributeValue, len(m.MessageAttributes))
	for k, v := range m.MessageAttributes {
		out[k] = types.MessageAttributeValue{DataType: aws.String(v.DataType), StringValue: v.StringValue, BinaryValue: v.BinaryValue}
	}
	return out
}

// size is what the message counts against the SQS request size limit:
// the body and each attribute's name, type and value.
func (m *Message) size() int {
	n := len(m.Body)
	for k, v := range m.MessageAttributes {
		n += len(k) + len(v.DataType) + len(v.BinaryValue)
		if v.StringValue != nil {
			n += len(*v.StringValue)
		}
	}
	return n
}
