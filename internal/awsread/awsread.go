// Package awsread adapts the AWS SDK to the read interfaces of the write
// core: Step Functions DescribeExecution and GetExecutionHistory, and S3
// GetObject and HeadObject, with S3's errors sorted into the object's own
// (recovery.ErrNotFound, recovery.ErrRefused) and the rest (transient).
package awsread

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"
	"github.com/aws/smithy-go"
	"github.com/deadletter/deadletter/internal/awsconfig"
	"github.com/deadletter/deadletter/internal/recovery"
)

// SFNAPI is the part of the Step Functions client used.
type SFNAPI interface {
	DescribeExecution(context.Context, *sfn.DescribeExecutionInput, ...func(*sfn.Options)) (*sfn.DescribeExecutionOutput, error)
	GetExecutionHistory(context.Context, *sfn.GetExecutionHistoryInput, ...func(*sfn.Options)) (*sfn.GetExecutionHistoryOutput, error)
}

// StepFunctions implements recovery.StepFunctions.
type StepFunctions struct{ Client SFNAPI }

func notFound(err error) bool {
	var enf *sfntypes.ExecutionDoesNotExist
	if errors.As(err, &enf) {
		return true
	}
	var ae smithy.APIError
	return errors.As(err, &ae) && (ae.ErrorCode() == "ExecutionDoesNotExist" || ae.ErrorCode() == "NoSuchKey" || ae.ErrorCode() == "NotFound")
}

func (s StepFunctions) DescribeExecution(ctx context.Context, arn string) (recovery.ExecutionDescription, error) {
	out, err := s.Client.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(arn)})
	if err != nil {
		if notFound(err) {
			return recovery.ExecutionDescription{}, fmt.Errorf("%w: execution %s does not exist (history expired?)", recovery.ErrNotFound, arn)
		}
		return recovery.ExecutionDescription{}, err
	}
	var d recovery.ExecutionDescription
	if out.StartDate != nil {
		d.StartDate = *out.StartDate
	}
	if out.StopDate != nil {
		d.StopDate = *out.StopDate
	}
	return d, nil
}

func (s StepFunctions) GetExecutionHistory(ctx context.Context, arn string) ([]recovery.HistoryEvent, error) {
	var events []recovery.HistoryEvent
	p := sfn.NewGetExecutionHistoryPaginator(s.Client, &sfn.GetExecutionHistoryInput{ExecutionArn: aws.String(arn), MaxResults: 1000})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			if notFound(err) {
				return nil, fmt.Errorf("%w: execution %s does not exist (history expired?)", recovery.ErrNotFound, arn)
			}
			return nil, err
		}
		for _, e := range page.Events {
			he := recovery.HistoryEvent{ID: e.Id, PreviousEventID: e.PreviousEventId, Type: string(e.Type)}
			if d := e.StateEnteredEventDetails; d != nil {
				he.StateName = aws.ToString(d.Name)
			}
			if d := e.StateExitedEventDetails; d != nil {
				he.StateName = aws.ToString(d.Name)
				he.Output = d.Output
			}
			if d := e.ActivityFailedEventDetails; d != nil {
				he.FailedDetails = failedDetails("error", d.Error, "cause", d.Cause)
			}
			if d := e.LambdaFunctionFailedEventDetails; d != nil {
				he.FailedDetails = failedDetails("error", d.Error, "cause", d.Cause)
			}
			if d := e.TaskFailedEventDetails; d != nil {
				he.FailedDetails = failedDetails("error", d.Error, "cause", d.Cause, "resource", d.Resource, "resourceType", d.ResourceType)
			}
			events = append(events, he)
		}
	}
	return events, nil
}

// failedDetails is a failure's details as the JSON object Cumulus spreads
// into the exception: each name followed by its value, the absent ones
// left out.
func failedDetails(fieldsAndValues ...any) string {
	fields := ""
	for i := 0; i+1 < len(fieldsAndValues); i += 2 {
		v, _ := fieldsAndValues[i+1].(*string)
		if v == nil {
			continue
		}
		if fields != "" {
			fields += ","
		}
		fields += quote(fieldsAndValues[i].(string)) + ":" + quote(*v)
	}
	return "{" + fields + "}"
}

// S3API is the part of the S3 client used.
type S3API interface {
	GetObject(context.Context, *s3.GetObjectInput, ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	HeadObject(context.Context, *s3.HeadObjectInput, ...func(*s3.Options)) (*s3.HeadObjectOutput, error)
}

// Objects implements recovery.Objects.
type Objects struct {
	Client S3API
	// ReplaceBucket is the bucket `replace` payloads are read from: the
	// archive's (Cumulus's system bucket). "" reads none.
	ReplaceBucket string
}

// SystemBucket implements recovery.Objects.
func (o Objects) SystemBucket() string { return o.ReplaceBucket }

func s3NotFound(err error) bool {
	var nsk *s3types.NoSuchKey
	var nf *s3types.NotFound
	var nb *s3types.NoSuchBucket
	if errors.As(err, &nsk) || errors.As(err, &nf) || errors.As(err, &nb) {
		return true
	}
	var ae smithy.APIError
	return errors.As(err, &ae) && (ae.ErrorCode() == "NoSuchKey" || ae.ErrorCode() == "NotFound" || ae.ErrorCode() == "NoSuchBucket")
}

// everyObjectCodes are 4xx answers that are not about the object asked for:
// every request would get them (the clock, the account, a request that
// timed out). The credentials' own codes (expired, rejected) are
// awsconfig.Explain's; throttling codes are the SDK's retry lists.
var everyObjectCodes = map[string]bool{"RequestTimeTooSkewed": true, "AccountProblem": true, "NotSignedUp": true}

// refused reports whether S3 refused this one object for a reason of its
// own (see recovery.ErrRefused): a 4xx answer, or 301 (the bucket is in
// another region), that is neither about the credentials nor throttling.
func refused(err error) bool {
	if e, ok := awsconfig.Explain(err); ok {
		// A bucket in another region is this object's (its bucket's),
		// as a 301 always was here.
		return e.Kind == awsconfig.KindAccessDenied || e.Kind == awsconfig.KindNoBucket || e.Kind == awsconfig.KindWrongRegion
	}
	var ae smithy.APIError
	code := ""
	if errors.As(err, &ae) {
		code = ae.ErrorCode()
	}
	_, throttle := retry.DefaultThrottleErrorCodes[code]
	_, retryable := retry.DefaultRetryableErrorCodes[code]
	if throttle || retryable || everyObjectCodes[code] {
		return false
	}
	if code == "PermanentRedirect" {
		return true
	}
	var re *awshttp.ResponseError
	if !errors.As(err, &re) {
		return false
	}
	status := re.HTTPStatusCode()
	return status == 301 || status >= 400 && status < 500 && status != 408 && status != 429
}

// refusedError is S3's refusal of one object, in one line: the code, the
// message and the HTTP status, without the SDK's operation and request ids.
type refusedError struct{ err error }

func (e *refusedError) Error() string {
	var ae smithy.APIError
	s := "refused"
	if errors.As(e.err, &ae) {
		s = ae.ErrorCode()
		if m := ae.ErrorMessage(); m != "" {
			s += ": " + m
		}
	}
	var re *awshttp.ResponseError
	if errors.As(e.err, &re) {
		s += fmt.Sprintf(" (HTTP %d)", re.HTTPStatusCode())
	}
	return s
}

func (e *refusedError) Unwrap() []error { return []error{recovery.ErrRefused, e.err} }

// objectError sorts a GetObject or HeadObject error: ErrNotFound, ErrRefused,
// or err itself (transient).
func objectError(err error, bucket, key string) error {
	switch {
	case s3NotFound(err):
		return fmt.Errorf("%w: s3://%s/%s", recovery.ErrNotFound, bucket, key)
	case refused(err):
		return &refusedError{err: err}
	}
	return err
}

func (o Objects) GetObject(ctx context.Context, bucket, key string) ([]byte, error) {
	out, err := o.Client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		return nil, objectError(err, bucket, key)
	}
	defer out.Body.Close()
	return io.ReadAll(out.Body)
}

func (o Objects) ObjectSize(ctx context.Context, bucket, key string) (int64, error) {
	out, err := o.Client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		return 0, objectError(err, bucket, key)
	}
	return aws.ToInt64(out.ContentLength), nil
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
