package awsconfig

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The identity line names the endpoint each service really uses, in the
// SDK's order: --endpoint-url, the service's own AWS_ENDPOINT_URL_<SERVICE>,
// AWS_ENDPOINT_URL, the profile's endpoint_url (or its services section);
// "aws" only when none applies. It read only --endpoint-url and
// AWS_ENDPOINT_URL, and said endpoint=aws while AWS_ENDPOINT_URL_SQS sent
// every request elsewhere.
func TestDescribeNamesTheEndpointEachServiceUses(t *testing.T) {
	const (
		sqsURL    = "http://127.0.0.1:4566"
		globalURL = "http://127.0.0.1:7070"
		flagURL   = "http://127.0.0.1:9000"
		profURL   = "http://127.0.0.1:9324"
		s3URL     = "http://127.0.0.1:7171"
	)
	config := filepath.Join(t.TempDir(), "config")
	os.WriteFile(config, []byte("[profile loc]\nregion = us-east-1\nendpoint_url = "+profURL+
		"\n[profile svc]\nregion = us-east-1\nservices = local-sqs\n[services local-sqs]\nsqs =\n  endpoint_url = "+sqsURL+"\n"), 0o600)
	for _, c := range []struct {
		name     string
		env      map[string]string
		s        Settings
		services []string
		want     string
	}{
		{"nothing", nil, Settings{}, []string{ServiceSQS}, "profile=default region=us-east-1 endpoint=aws"},
		{"the service's variable", map[string]string{"AWS_ENDPOINT_URL_SQS": sqsURL}, Settings{}, []string{ServiceSQS},
			"profile=default region=us-east-1 endpoint=" + sqsURL + " (AWS_ENDPOINT_URL_SQS)"},
		{"the service's variable beats AWS_ENDPOINT_URL", map[string]string{"AWS_ENDPOINT_URL_SQS": sqsURL, "AWS_ENDPOINT_URL": globalURL}, Settings{}, []string{ServiceSQS},
			"profile=default region=us-east-1 endpoint=" + sqsURL + " (AWS_ENDPOINT_URL_SQS)"},
		{"another service's variable does not apply", map[string]string{"AWS_ENDPOINT_URL_S3": s3URL}, Settings{}, []string{ServiceSQS},
			"profile=default region=us-east-1 endpoint=aws"},
		{"AWS_ENDPOINT_URL", map[string]string{"AWS_ENDPOINT_URL": globalURL}, Settings{}, []string{ServiceSQS},
			"profile=default region=us-east-1 endpoint=" + globalURL + " (AWS_ENDPOINT_URL)"},
		{"the flag beats the variables", map[string]string{"AWS_ENDPOINT_URL_SQS": sqsURL, "AWS_ENDPOINT_URL": globalURL}, Settings{EndpointURL: flagURL}, []string{ServiceSQS},
			"profile=default region=us-east-1 endpoint=" + flagURL + " (--endpoint-url)"},
		{"the profile's endpoint_url", nil, Settings{Profile: "loc"}, []string{ServiceSQS},
			"profile=loc region=us-east-1 endpoint=" + profURL + " (profile loc)"},
		{"the profile's services section", nil, Settings{Profile: "svc"}, []string{ServiceSQS},
			"profile=svc region=us-east-1 endpoint=" + sqsURL + " (profile svc)"},
		{"AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", map[string]string{"AWS_ENDPOINT_URL_SQS": sqsURL, "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "true"}, Settings{}, []string{ServiceSQS},
			"profile=default region=us-east-1 endpoint=aws"},
		{"services that differ are each named", map[string]string{"AWS_ENDPOINT_URL_S3": s3URL}, Settings{}, []string{ServiceS3, ServiceSNS, ServiceSFN},
			"profile=default region=us-east-1 endpoint=S3 " + s3URL + " (AWS_ENDPOINT_URL_S3), SNS aws, SFN aws"},
		{"services that agree are named once", map[string]string{"AWS_ENDPOINT_URL": globalURL}, Settings{}, []string{ServiceS3, ServiceSNS, ServiceSFN, ServiceSecretsManager},
			"profile=default region=us-east-1 endpoint=" + globalURL + " (AWS_ENDPOINT_URL)"},
		{"Secrets Manager's variable", map[string]string{"AWS_ENDPOINT_URL_SECRETS_MANAGER": s3URL}, Settings{}, []string{ServiceSecretsManager},
			"profile=default region=us-east-1 endpoint=" + s3URL + " (AWS_ENDPOINT_URL_SECRETS_MANAGER)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			isolate(t)
			t.Setenv("AWS_CONFIG_FILE", config)
			t.Setenv("AWS_REGION", "us-east-1")
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			cfg, err := Load(context.Background(), c.s)
			if err != nil {
				t.Fatal(err)
			}
			if got := Describe(cfg, c.s, c.services...); got != c.want {
				t.Errorf("Describe = %q\nwant       %q", got, c.want)
			}
		})
	}
}

// An endpoint holding a password (a proxy or gateway given as
// http://user:pass@host) was printed whole on the identity line, which is
// read over shoulders and pasted into tickets: the password is hidden,
// the rest (user, host, port, path) still says where requests go.
func TestDescribeHidesAnEndpointsPassword(t *testing.T) {
	for _, c := range []struct{ env, flag, want string }{
		{env: "http://ops:s3cr3t@127.0.0.1:4566", want: "endpoint=http://ops:xxxxx@127.0.0.1:4566 (AWS_ENDPOINT_URL_SQS)"},
		{flag: "http://ops:p%40ss@127.0.0.1:4566/base", want: "endpoint=http://ops:xxxxx@127.0.0.1:4566/base (--endpoint-url)"},
		{env: "http://ops@127.0.0.1:4566", want: "endpoint=http://ops@127.0.0.1:4566 (AWS_ENDPOINT_URL_SQS)"},
	} {
		isolate(t)
		t.Setenv("AWS_CONFIG_FILE", os.DevNull)
		t.Setenv("AWS_REGION", "us-east-1")
		if c.env != "" {
			t.Setenv("AWS_ENDPOINT_URL_SQS", c.env)
		}
		s := Settings{EndpointURL: c.flag}
		cfg, err := Load(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		got := Describe(cfg, s, ServiceSQS)
		if !strings.HasSuffix(got, c.want) || strings.Contains(got, "s3cr3t") || strings.Contains(got, "p%40ss") {
			t.Errorf("Describe = %q, want it to end %q and hold no password", got, c.want)
		}
	}
	for in, want := range map[string]string{
		"http://u:p w@host": "http://xxxxx@host", // not a URL: everything before the @ is hidden
		"http://host:4566":  "http://host:4566",
	} {
		if got := RedactEndpoint(in); got != want {
			t.Errorf("RedactEndpoint(%q) = %q, want %q", in, got, want)
		}
	}
}

// A verb whose --endpoint-url does not cover a service it calls (pushdlq
// processor's Lambda) is refused only when the flag is set and the service
// has no endpoint of its own: its variable, AWS_ENDPOINT_URL or the
// profile's endpoint_url each give it one (issue 38 item 4).
func TestRequireOwnEndpointRefusesOnlyAServiceBoundForAWS(t *testing.T) {
	const flag, local = "http://127.0.0.1:9", "http://127.0.0.1:7070"
	config := filepath.Join(t.TempDir(), "config")
	os.WriteFile(config, []byte("[profile loc]\nregion = us-east-1\nendpoint_url = "+local+"\n"), 0o600)
	for _, c := range []struct {
		name    string
		env     map[string]string
		s       Settings
		refused bool
	}{
		{"no flag", nil, Settings{}, false},
		{"the flag alone", nil, Settings{EndpointURL: flag}, true},
		{"another service's variable", map[string]string{"AWS_ENDPOINT_URL_SQS": local}, Settings{EndpointURL: flag}, true},
		{"the service's variable", map[string]string{"AWS_ENDPOINT_URL_LAMBDA": local}, Settings{EndpointURL: flag}, false},
		{"AWS_ENDPOINT_URL", map[string]string{"AWS_ENDPOINT_URL": local}, Settings{EndpointURL: flag}, false},
		{"the profile's endpoint_url", nil, Settings{EndpointURL: flag, Profile: "loc"}, false},
		{"AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", map[string]string{"AWS_ENDPOINT_URL_LAMBDA": local, "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "true"}, Settings{EndpointURL: flag}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			isolate(t)
			t.Setenv("AWS_CONFIG_FILE", config)
			t.Setenv("AWS_REGION", "us-east-1")
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			cfg, err := Load(context.Background(), c.s)
			if err != nil {
				t.Fatal(err)
			}
			err = RequireOwnEndpoint(cfg, c.s, "processor", ServiceSQS, ServiceLambda)
			want := "processor calls Lambda, and --endpoint-url covers SQS only: set AWS_ENDPOINT_URL_LAMBDA to reach Lambda at a local endpoint, or drop --endpoint-url"
			switch {
			case c.refused && (err == nil || err.Error() != want):
				t.Errorf("RequireOwnEndpoint = %v, want %q", err, want)
			case !c.refused && err != nil:
				t.Errorf("RequireOwnEndpoint = %v, want nil", err)
			}
		})
	}
}
