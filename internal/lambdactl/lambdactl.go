// Package lambdactl reads and changes a Lambda function's environment and
// event source mappings through aws-sdk-go-v2, the way the push-dlq runbook
// does by hand: the environment is merged, never replaced, and written back
// only if nobody changed the function since it was read (RevisionId).
package lambdactl

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"
)

// API is the part of the Lambda client the runbook needs.
type API interface {
	GetFunctionConfiguration(context.Context, *lambda.GetFunctionConfigurationInput, ...func(*lambda.Options)) (*lambda.GetFunctionConfigurationOutput, error)
	UpdateFunctionConfiguration(context.Context, *lambda.UpdateFunctionConfigurationInput, ...func(*lambda.Options)) (*lambda.UpdateFunctionConfigurationOutput, error)
	ListEventSourceMappings(context.Context, *lambda.ListEventSourceMappingsInput, ...func(*lambda.Options)) (*lambda.ListEventSourceMappingsOutput, error)
	UpdateEventSourceMapping(context.Context, *lambda.UpdateEventSourceMappingInput, ...func(*lambda.Options)) (*lambda.UpdateEventSourceMappingOutput, error)
}

// Function is what the runbook reads of a function.
type Function struct {
	Name, ARN        string
	RevisionID       string
	State            string
	LastUpdateStatus string // InProgress, Successful, Failed
	LastUpdateReason string
	Env              map[string]string
}

// Mapping is an event source mapping of the function.
type Mapping struct {
	UUID           string `json:"uuid"`
	EventSourceARN string `json:"event_source_arn"`
	State          string `json:"state"` // Enabled, Disabled, Enabling, Disabling, Updating ...
	BatchSize      int32  `json:"batch_size"`
	MaxConcurrency *int32 `json:"maximum_concurrency"`
}

// ErrConflict: the function changed between the read and the write.
var ErrConflict = errors.New("the function was changed by someone else since it was read; nothing was written")

// ErrNotFound: the function or mapping does not exist.
var ErrNotFound = errors.New("not found")

func notFound(what string, err error) error {
	var nf *types.ResourceNotFoundException
	if errors.As(err, &nf) {
		return fmt.Errorf("%s: %w (%s)", what, ErrNotFound, aws.ToString(nf.Message))
	}
	return fmt.Errorf("%s: %w", what, err)
}

// Get reads a function's configuration.
func Get(ctx context.Context, api API, name string) (Function, error) {
	out, err := api.GetFunctionConfiguration(ctx, &lambda.GetFunctionConfigurationInput{FunctionName: aws.String(name)})
	if err != nil {
		return Function{}, notFound("function "+name, err)
	}
	f := Function{
		Name: aws.ToString(out.FunctionName), ARN: aws.ToString(out.FunctionArn), RevisionID: aws.ToString(out.RevisionId),
		State: string(out.State), LastUpdateStatus: string(out.LastUpdateStatus), LastUpdateReason: aws.ToString(out.LastUpdateStatusReason),
		Env: map[string]string{},
	}
	if out.Environment != nil {
		for k, v := range out.Environment.Variables {
			f.Env[k] = v
		}
	}
	return f, nil
}

// SetEnv writes vars (the whole environment) to the function read as fn,
// on the condition that its RevisionId is still fn's.
func SetEnv(ctx context.Context, api API, fn Function, vars map[string]string) error {
	_, err := api.UpdateFunctionConfiguration(ctx, &lambda.UpdateFunctionConfigurationInput{
		FunctionName: aws.String(fn.Name),
		Environment:  &types.Environment{Variables: vars},
		RevisionId:   aws.String(fn.RevisionID),
	})
	var pf *types.PreconditionFailedException
	var rc *types.ResourceConflictException
	switch {
	case errors.As(err, &pf):
		return fmt.Errorf("update the environment of %s: %w (revision %s is no longer current); read it again and retry", fn.Name, ErrConflict, fn.RevisionID)
	case errors.As(err, &rc):
		return fmt.Errorf("update the environment of %s: %w (an update is in progress: %s); retry once it ends", fn.Name, ErrConflict, aws.ToString(rc.Message))
	case err != nil:
		return notFound("update the environment of "+fn.Name, err)
	}
	return nil
}

// Wait polls the function until its last update ends: Successful returns
// the function; Failed is an error with Lambda's reason.
func Wait(ctx context.Context, api API, name string, poll time.Duration, progress func(Function)) (Function, error) {
	for {
		fn, err := Get(ctx, api, name)
		if err != nil {
			return fn, err
		}
		if progress != nil {
			progress(fn)
		}
		switch types.LastUpdateStatus(fn.LastUpdateStatus) {
		case types.LastUpdateStatusSuccessful, "":
			return fn, nil
		case types.LastUpdateStatusFailed:
			return fn, fmt.Errorf("the update of %s failed: %s", name, fn.LastUpdateReason)
		}
		t := time.NewTimer(poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return fn, ctx.Err()
		case <-t.C:
		}
	}
}

// Mappings lists the function's event source mappings.
func Mappings(ctx context.Context, api API, name string) ([]Mapping, error) {
	in := &lambda.ListEventSourceMappingsInput{FunctionName: aws.String(name)}
	var out []Mapping
	for {
		page, err := api.ListEventSourceMappings(ctx, in)
		if err != nil {
			return nil, notFound("event source mappings of "+name, err)
		}
		for _, m := range page.EventSourceMappings {
			out = append(out, mapping(m.UUID, m.EventSourceArn, m.State, m.BatchSize, m.ScalingConfig))
		}
		if aws.ToString(page.NextMarker) == "" {
			return out, nil
		}
		in.Marker = page.NextMarker
	}
}

func mapping(uuid, arn, state *string, batch *int32, sc *types.ScalingConfig) Mapping {
	m := Mapping{UUID: aws.ToString(uuid), EventSourceARN: aws.ToString(arn), State: aws.ToString(state), BatchSize: aws.ToInt32(batch)}
	if sc != nil && sc.MaximumConcurrency != nil {
		n := *sc.MaximumConcurrency
		m.MaxConcurrency = &n
	}
	return m
}

// SetMapping enables or disables a mapping, setting its maximum
// concurrency when maxConcurrency is not nil.
func SetMapping(ctx context.Context, api API, uuid string, enabled bool, maxConcurrency *int32) (Mapping, error) {
	in := &lambda.UpdateEventSourceMappingInput{UUID: aws.String(uuid), Enabled: aws.Bool(enabled)}
	if maxConcurrency != nil {
		in.ScalingConfig = &types.ScalingConfig{MaximumConcurrency: maxConcurrency}
	}
	out, err := api.UpdateEventSourceMapping(ctx, in)
	if err != nil {
		return Mapping{}, notFound("event source mapping "+uuid, err)
	}
	return mapping(out.UUID, out.EventSourceArn, out.State, out.BatchSize, out.ScalingConfig), nil
}
