package awsconfig

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/athena"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sns"
)

// SFN returns a Step Functions client (--endpoint-url applies).
func SFN(cfg aws.Config, s Settings) *sfn.Client {
	return sfn.NewFromConfig(cfg, func(o *sfn.Options) {
		if s.EndpointURL != "" {
			o.BaseEndpoint = aws.String(s.EndpointURL)
		}
		o.APIOptions = append(o.APIOptions, RegionCheck)
	})
}

// SecretsManager returns a Secrets Manager client (--endpoint-url applies).
func SecretsManager(cfg aws.Config, s Settings) *secretsmanager.Client {
	return secretsmanager.NewFromConfig(cfg, func(o *secretsmanager.Options) {
		if s.EndpointURL != "" {
			o.BaseEndpoint = aws.String(s.EndpointURL)
		}
		o.APIOptions = append(o.APIOptions, RegionCheck)
	})
}

// SNS returns an SNS client (--endpoint-url applies).
func SNS(cfg aws.Config, s Settings) *sns.Client {
	return sns.NewFromConfig(cfg, func(o *sns.Options) {
		if s.EndpointURL != "" {
			o.BaseEndpoint = aws.String(s.EndpointURL)
		}
		o.APIOptions = append(o.APIOptions, RegionCheck)
	})
}

// SecretText reads a secret's string value by name or ARN.
func SecretText(ctx context.Context, c *secretsmanager.Client, id string) ([]byte, error) {
	out, err := c.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(id)})
	if err != nil {
		return nil, err
	}
	return []byte(aws.ToString(out.SecretString)), nil
}

// Athena returns an Athena client (--endpoint-url applies).
func Athena(cfg aws.Config, s Settings) *athena.Client {
	return athena.NewFromConfig(cfg, func(o *athena.Options) {
		if s.EndpointURL != "" {
			o.BaseEndpoint = aws.String(s.EndpointURL)
		}
		o.APIOptions = append(o.APIOptions, RegionCheck)
	})
}

// Lambda returns a Lambda client (--endpoint-url applies).
func Lambda(cfg aws.Config, s Settings) *lambda.Client {
	return lambda.NewFromConfig(cfg, func(o *lambda.Options) {
		if s.EndpointURL != "" {
			o.BaseEndpoint = aws.String(s.EndpointURL)
		}
		o.APIOptions = append(o.APIOptions, RegionCheck)
	})
}
