package awsconfig

import (
	"context"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// SQS returns an SQS client. Its request bodies hide io.WriterTo: with a
// body that has WriteTo, smithy-go can close the body while net/http is
// still writing it, the connection drops mid-response, and the retry sends
// the request again, which for SendMessageBatch means a duplicate batch and
// for ReceiveMessage a batch hidden for the visibility timeout. A plain
// reader (still seekable, so retries rewind) avoids the race.
func SQS(cfg aws.Config, s Settings) *sqs.Client {
	return sqs.NewFromConfig(cfg, func(o *sqs.Options) {
		if s.EndpointURL != "" {
			o.BaseEndpoint = aws.String(s.EndpointURL)
		}
		o.APIOptions = append(o.APIOptions, HidePayloadWriterTo, RegionCheck)
		// Idle connections: HTTPClient (in every configuration Load
		// makes) keeps one per call in flight, where the SDK keeps 10.
	})
}

// HidePayloadWriterTo installs the body wrapper described at SQS; tests
// building their own clients use it too.
func HidePayloadWriterTo(stack *middleware.Stack) error {
	return stack.Finalize.Add(middleware.FinalizeMiddlewareFunc("deadletterHidePayloadWriterTo",
		func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
			if req, ok := in.Request.(*smithyhttp.Request); ok {
				if rs, ok := req.GetStream().(io.ReadSeeker); ok {
					if _, hasWriteTo := rs.(io.WriterTo); hasWriteTo {
						wrapped, err := req.SetStream(readSeeker{rs})
						if err != nil {
							return middleware.FinalizeOutput{}, middleware.Metadata{}, err
						}
						in.Request = wrapped
					}
				}
			}
			return next.HandleFinalize(ctx, in)
		}), middleware.After)
}

// readSeeker exposes only Read and Seek.
type readSeeker struct{ r io.ReadSeeker }

func (r readSeeker) Read(p []byte) (int, error)                { return r.r.Read(p) }
func (r readSeeker) Seek(off int64, whence int) (int64, error) { return r.r.Seek(off, whence) }
