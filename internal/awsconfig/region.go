package awsconfig

import (
	"context"
	"fmt"
	"reflect"
	"regexp"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
)

// RegionMismatchError is a failed call whose request named a resource
// (an ARN, a queue URL) in another region than the client's. Nothing else
// in AWS's answer says so: Step Functions answers ExecutionDoesNotExist,
// Secrets Manager and Lambda ResourceNotFoundException, SNS NotFound, SQS
// InvalidAddress. Explain puts the region first.
type RegionMismatchError struct {
	Resource       string // the ARN or URL as the request named it
	ResourceRegion string
	ClientRegion   string
	Err            error
}

func (e *RegionMismatchError) Error() string { return e.Err.Error() }
func (e *RegionMismatchError) Unwrap() error { return e.Err }

// arnOrQueueRegion finds the region of an ARN ("arn:aws:states:eu-west-1:…")
// or of an SQS queue URL ("https://sqs.eu-west-1.amazonaws.com/…").
var arnOrQueueRegion = regexp.MustCompile(`^(?:arn:aws[a-z-]*:[a-z0-9-]+:([a-z]{2}(?:-[a-z]+)+-\d+):|https://sqs\.([a-z]{2}(?:-[a-z]+)+-\d+)\.amazonaws\.com(?:\.cn)?/)`)

// RegionCheck is an API option that turns a failed call naming a resource
// in another region into a RegionMismatchError. It reads the input's
// top-level string fields only after a failure, so a call that succeeds
// costs nothing.
func RegionCheck(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("deadletterRegionCheck",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			out, md, err := next.HandleInitialize(ctx, in)
			if err == nil {
				return out, md, nil
			}
			client := awsmiddleware.GetRegion(ctx)
			if client == "" {
				return out, md, err
			}
			if resource, region := resourceRegion(in.Parameters); region != "" && region != client {
				err = &RegionMismatchError{Resource: resource, ResourceRegion: region, ClientRegion: client, Err: err}
			}
			return out, md, err
		}), middleware.After) // after the SDK's own, which put the client's region in ctx
}

// resourceRegion is the first ARN or queue URL among the top-level string
// fields of an operation's input, and its region.
func resourceRegion(params any) (string, string) {
	v := reflect.ValueOf(params)
	for v.Kind() == reflect.Pointer && !v.IsNil() {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return "", ""
	}
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		if f.Kind() == reflect.Pointer && !f.IsNil() {
			f = f.Elem()
		}
		if f.Kind() != reflect.String {
			continue
		}
		if m := arnOrQueueRegion.FindStringSubmatch(f.String()); m != nil {
			return f.String(), m[1] + m[2]
		}
	}
	return "", ""
}

func (e *RegionMismatchError) explain(service string) string {
	resource := e.Resource
	if len(resource) > 200 {
		resource = resource[:200] + "…"
	}
	return fmt.Sprintf("the %s resource %s is in another region (%s) than the one in use (%s); pass --region %s or set AWS_REGION",
		service, resource, e.ResourceRegion, e.ClientRegion, e.ResourceRegion)
}
