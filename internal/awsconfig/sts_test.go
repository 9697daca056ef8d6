package awsconfig_test

import (
	"context"
	"errors"
	"testing"

	"github.com/deadletter/deadletter/internal/awsconfig"
	"github.com/deadletter/deadletter/internal/testsupport"
)

func TestCallerIdentityAsksSTSAtItsOwnEndpoint(t *testing.T) {
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_REGION", "us-east-1")
	ctx := context.Background()
	s := awsconfig.Settings{EndpointURL: "http://127.0.0.1:1"}
	cfg, err := awsconfig.Load(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := awsconfig.CallerIdentity(cfg, s)(ctx); !errors.Is(err, awsconfig.ErrNoSTSEndpoint) {
		t.Fatalf("with --endpoint-url and no STS endpoint: %v", err)
	}
	t.Setenv("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:1")
	if _, _, err := awsconfig.CallerIdentity(cfg, awsconfig.Settings{})(ctx); !errors.Is(err, awsconfig.ErrNoSTSEndpoint) {
		t.Fatalf("with AWS_ENDPOINT_URL_S3 and no STS endpoint: %v", err)
	}
	testsupport.STSResponder(t, "arn:aws:sts::123456789012:assumed-role/ops-oncall/alice", "123456789012")
	cfg, err = awsconfig.Load(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	arn, account, err := awsconfig.CallerIdentity(cfg, s)(ctx)
	if err != nil || arn != "arn:aws:sts::123456789012:assumed-role/ops-oncall/alice" || account != "123456789012" {
		t.Fatalf("arn %q account %q err %v", arn, account, err)
	}
}
