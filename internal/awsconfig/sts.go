package awsconfig

import (
	"context"
	"errors"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sts"
)

// ServiceSTS names STS, for the audit's caller identity.
const ServiceSTS = "STS"

// ErrNoSTSEndpoint is the caller identity not asked for: the run's
// services are pointed elsewhere (--endpoint-url, AWS_ENDPOINT_URL_<SERVICE>)
// and STS has no endpoint of its own (AWS_ENDPOINT_URL_STS,
// AWS_ENDPOINT_URL, the profile), so that asking would leave for AWS while
// everything else stays local.
var ErrNoSTSEndpoint = errors.New("not asked: endpoints are overridden (--endpoint-url or AWS_ENDPOINT_URL_<SERVICE>) and STS has none of its own (AWS_ENDPOINT_URL_STS)")

// CallerIdentity is STS GetCallerIdentity: the ARN and account of the
// credentials cfg holds. --endpoint-url does not apply (no local S3 or SQS
// server answers STS); STS's own endpoint settings do. One attempt: the
// audit waits for it a few seconds at most.
func CallerIdentity(cfg aws.Config, s Settings) func(ctx context.Context) (string, string, error) {
	return func(ctx context.Context) (string, string, error) {
		c := sts.NewFromConfig(cfg, func(o *sts.Options) {
			o.RetryMaxAttempts = 1
		})
		if c.Options().BaseEndpoint == nil && endpointsOverridden(s) {
			return "", "", ErrNoSTSEndpoint
		}
		out, err := c.GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
		if err != nil {
			return "", "", err
		}
		return aws.ToString(out.Arn), aws.ToString(out.Account), nil
	}
}

// endpointsOverridden reports whether any service's endpoint is set
// elsewhere than AWS: the flag, or an AWS_ENDPOINT_URL variable.
func endpointsOverridden(s Settings) bool {
	if s.EndpointURL != "" {
		return true
	}
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "AWS_ENDPOINT_URL") {
			return true
		}
	}
	return false
}
