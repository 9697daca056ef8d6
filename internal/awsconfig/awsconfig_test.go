package awsconfig

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// isolate points the SDK at an empty shared config and clears AWS_* vars.
func isolate(t *testing.T) {
	t.Helper()
	for _, k := range []string{"AWS_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL_SQS",
		"AWS_ENDPOINT_URL_SNS", "AWS_ENDPOINT_URL_SFN", "AWS_ENDPOINT_URL_SECRETS_MANAGER", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "DEADLETTER_DEBUG"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	empty := filepath.Join(t.TempDir(), "empty")
	os.WriteFile(empty, nil, 0o600)
	t.Setenv("AWS_CONFIG_FILE", empty)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", empty)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
}

func TestRegionPrecedence(t *testing.T) {
	isolate(t)
	ctx := context.Background()
	if _, err := Load(ctx, Settings{}); err == nil || !strings.Contains(err.Error(), "no AWS region") {
		t.Fatalf("no region anywhere: err = %v", err)
	}
	t.Setenv("AWS_REGION", "us-west-2")
	if cfg, err := Load(ctx, Settings{}); err != nil || cfg.Region != "us-west-2" {
		t.Fatalf("env region: %q, %v", cfg.Region, err)
	}
	if cfg, err := Load(ctx, Settings{Region: "eu-west-1"}); err != nil || cfg.Region != "eu-west-1" {
		t.Fatalf("--region must beat AWS_REGION: %q, %v", cfg.Region, err)
	}
}

func TestProfileFlagBeatsEnv(t *testing.T) {
	isolate(t)
	cfgFile := filepath.Join(t.TempDir(), "config")
	os.WriteFile(cfgFile, []byte("[profile ops]\nregion = ap-south-1\n[profile other]\nregion = sa-east-1\n"), 0o600)
	t.Setenv("AWS_CONFIG_FILE", cfgFile)
	t.Setenv("AWS_PROFILE", "other")
	cfg, err := Load(context.Background(), Settings{Profile: "ops"})
	if err != nil || cfg.Region != "ap-south-1" {
		t.Fatalf("--profile ops: region %q, %v", cfg.Region, err)
	}
	if s := Describe(cfg, Settings{Profile: "ops"}); !strings.Contains(s, "profile=ops") || !strings.Contains(s, "region=ap-south-1") {
		t.Errorf("Describe = %q", s)
	}
}

func TestEndpointOverride(t *testing.T) {
	isolate(t)
	if (Settings{}).EndpointOverridden("S3") {
		t.Error("no endpoint configured, yet overridden")
	}
	t.Setenv("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:7070")
	if !(Settings{}).EndpointOverridden("S3") {
		t.Error("AWS_ENDPOINT_URL_S3 not seen")
	}
	// A local endpoint with no region still works (emulators accept any).
	if cfg, err := Load(context.Background(), Settings{EndpointURL: "http://127.0.0.1:7070"}); err != nil || cfg.Region == "" {
		t.Errorf("endpoint without region: %q, %v", cfg.Region, err)
	}
	t.Setenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "true")
	if (Settings{}).EndpointOverridden("S3") {
		t.Error("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=true must disable the env endpoint")
	}
	if !(Settings{EndpointURL: "http://x"}).EndpointOverridden("S3") {
		t.Error("--endpoint-url always overrides")
	}
}
