package awsconfig

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
)

// SFN returns a Step Functions client (--endpoint-url applies).
func SFN(cfg aws.Config, s Settings) *sfn.Client {
	return sfn.NewFromConfig(cfg, func(o *sfn.Options) {
		if s.EndpointURL != "" {
			o.BaseEndpoint = aws.String(s.EndpointURL)
		}
	})
}

// SecretsManager returns a Secrets Manager client (--endpoint-url applies).
func SecretsManager(cfg aws.Config, s Settings) *secretsmanager.Client {
	return secretsmanager.NewFromConfig(cfg, func(o *secretsmanager.Options) {
		if s.EndpointURL != "" {
			o.BaseEndpoint = aws.String(s.EndpointURL)
		}
	})
}
