package lambdart

import (
	"maps"
	"testing"

	"github.com/deadletter/deadletter/internal/testsupport"
)

// ServiceEnv is the environment that points a function's AWS SDK at the
// test services: "sqs" and "sns" (both fauxqs) and "s3" (versitygw), as
// AWS_ENDPOINT_URL_<SERVICE>. It skips or fails the test, as testsupport
// does, when a service named is not running. Merge it into Function.Env:
//
//	env := lambdart.ServiceEnv(t, "sqs", "sns")
//	env["PUSH_DLQ_QUEUE_URL"] = dlq
func ServiceEnv(t testing.TB, services ...string) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, s := range services {
		switch s {
		case "sqs":
			env["AWS_ENDPOINT_URL_SQS"] = testsupport.SQSEndpoint(t)
		case "sns":
			env["AWS_ENDPOINT_URL_SNS"] = testsupport.SQSEndpoint(t)
		case "s3":
			env["AWS_ENDPOINT_URL_S3"] = testsupport.S3Endpoint(t)
		default:
			t.Fatalf("lambdart.ServiceEnv: unknown service %q (sqs, sns, s3)", s)
		}
	}
	return env
}

// Env merges environments, later ones winning.
func Env(envs ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, e := range envs {
		maps.Copy(out, e)
	}
	return out
}
