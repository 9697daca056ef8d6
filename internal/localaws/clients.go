package localaws

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/deadletter/deadletter/internal/awsconfig"
)

// The local servers' credentials (versitygw's root account; fauxqs takes
// any).
const (
	AccessKey = "test"
	SecretKey = "testtesttest"
)

// EnvSQSEndpoint names the local SQS server's endpoint variable.
const EnvSQSEndpoint = "DEADLETTER_TEST_SQS_ENDPOINT"

// Config is an AWS configuration with the local credentials, us-east-1,
// and the project's HTTP client: no profile, no instance metadata.
func Config() aws.Config {
	return aws.Config{
		HTTPClient:  awsconfig.HTTPClient(),
		Region:      "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider(AccessKey, SecretKey, ""),
	}
}

// SQSClient is an SQS client for the local server at endpoint.
func SQSClient(endpoint string) *sqs.Client {
	return awsconfig.SQS(Config(), awsconfig.Settings{EndpointURL: endpoint})
}
