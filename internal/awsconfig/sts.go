package awsconfig

import (
	"context"
	"errors"
	"net"
	"net/url"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sts"
)

// ServiceSTS names STS, for the audit's caller identity.
const ServiceSTS = "STS"

// ErrNoSTSEndpoint is the caller identity not asked for: the run's
// services are pointed at a local server (--endpoint-url,
// AWS_ENDPOINT_URL_<SERVICE> on a loopback address)
// and STS has no endpoint of its own (AWS_ENDPOINT_URL_STS,
// AWS_ENDPOINT_URL, the profile), so that asking would leave for AWS while
// everything else stays local.
var ErrNoSTSEndpoint = errors.New("not asked: endpoints point at a local server (--endpoint-url or AWS_ENDPOINT_URL_<SERVICE>) and STS has none of its own (AWS_ENDPOINT_URL_STS)")

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

// endpointsOverridden reports whether any service's endpoint is set to a
// local server (a loopback address) by the flag or an AWS_ENDPOINT_URL
// variable: a local run, where STS may be asked only at an endpoint of its
// own. An override to a VPC endpoint of AWS leaves STS asked as usual.
func endpointsOverridden(s Settings) bool {
	urls := []string{s.EndpointURL}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(k, "AWS_ENDPOINT_URL") {
			urls = append(urls, v)
		}
	}
	for _, u := range urls {
		if u == "" {
			continue
		}
		p, err := url.Parse(u)
		if err != nil {
			return true // not read: as if local, never asked of AWS
		}
		host := p.Hostname()
		if ip := net.ParseIP(host); host == "localhost" || (ip != nil && ip.IsLoopback()) {
			return true
		}
	}
	return false
}
