package main

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/deadletter/deadletter/internal/testsupport"
	"github.com/deadletter/deadletter/internal/testsupport/lambdart"
)

// TestColdStartNeverShowsTheDatabasePassword starts the real bootstrap
// with database settings that each stop the cold start: a connection
// string that does not parse, one whose server refuses, one with a wrong
// password against the real PostgreSQL, one whose database has no Cumulus
// tables. Each fails the init naming DATABASE_URL, and the password (the
// marker) appears nowhere: not in the init error, not in any line the
// process wrote.
func TestColdStartNeverShowsTheDatabasePassword(t *testing.T) {
	const pw = "Pw0MARKERzz"
	bin := lambdart.Build(t, "./cmd/sf-event-sqs-to-db-records")
	real, err := url.Parse(testsupport.NewDatabase(t)) // a real server, no Cumulus tables
	if err != nil {
		t.Fatal(err)
	}
	wrong, query := *real, *real
	wrong.User = url.UserPassword(real.User.Username(), pw)
	query.User = url.User(real.User.Username())
	query.RawQuery = url.Values{"password": {pw}, "sslmode": {"disable"}}.Encode()
	secrets := []string{pw}
	if p, ok := real.User.Password(); ok && len(p) > 3 {
		secrets = append(secrets, p)
	}
	topics := map[string]string{"execution_sns_topic_arn": "arn:aws:sns:us-east-1:123456789012:e",
		"granule_sns_topic_arn": "arn:aws:sns:us-east-1:123456789012:g", "pdr_sns_topic_arn": "arn:aws:sns:us-east-1:123456789012:p"}
	for _, url := range []string{
		"postgres://u:" + pw + "@127.0.0.1:notaport/db",
		"postgres://u:" + pw + "%ZZ@127.0.0.1:1/db",
		"postgresql://u:" + pw + "@[::1/db",
		"host=127.0.0.1 port=x password=" + pw + " user=u dbname=db",
		"host=127.0.0.1 port=1 password='" + pw + " x' user=u dbname=db",
		"postgres://u:" + pw + "@127.0.0.1:1/db?sslmode=disable",
		wrong.String(), query.String(), real.String(),
	} {
		t.Run("", func(t *testing.T) {
			rt := lambdart.Start(t, lambdart.Function{Bootstrap: bin, Env: lambdart.Env(lambdart.ServiceEnv(t, "sqs", "sns", "s3"), topics,
				map[string]string{"DATABASE_URL": url, "DeadLetterQueue": "https://sqs.us-east-1.amazonaws.com/123456789012/dlq", "system_bucket": "demo-internal"})})
			_, err := rt.Invoke(context.Background(), []byte(`{"Records":[]}`))
			if !errors.Is(err, lambdart.ErrInitFailed) {
				t.Fatalf("%s: invoke error %v, want a failed init", strings.ReplaceAll(url, pw, "<pw>"), err)
			}
			for _, secret := range secrets {
				if strings.Contains(err.Error(), secret) || strings.Contains(string(rt.Logs()), secret) {
					t.Errorf("a password is shown:\n%s\n%s", err, rt.Logs())
				}
			}
			if !strings.Contains(err.Error(), "DATABASE_URL") {
				t.Errorf("%s: the init error does not name DATABASE_URL: %v", strings.ReplaceAll(url, pw, "<pw>"), err)
			}
		})
	}
}

// TestColdStartNeverShowsTheSecretsPassword: the database comes from
// Cumulus's secret (databaseCredentialSecretArn), served by a Secrets
// Manager fake. A secret the cold start cannot use (its port is not a
// number; its server refuses; no such secret) fails the init naming the
// variable and the secret's ARN, and the password in it appears nowhere.
func TestColdStartNeverShowsTheSecretsPassword(t *testing.T) {
	const pw = "Pw1MARKERyy"
	bin := lambdart.Build(t, "./cmd/sf-event-sqs-to-db-records")
	arn := func(name string) string { return "arn:aws:secretsmanager:us-east-1:123456789012:secret:" + name }
	sm := testsupport.NewSecretsFake(t, map[string]string{
		arn("badport"): `{"host":"127.0.0.1","port":"54x32","username":"u","password":"` + pw + `","database":"db"}`,
		arn("refused"): `{"host":"127.0.0.1","port":1,"username":"u","password":"` + pw + `","database":"db"}`,
		arn("broken"):  `{"host":"127.0.0.1","password":"` + pw,
	})
	topics := map[string]string{"execution_sns_topic_arn": "arn:aws:sns:us-east-1:123456789012:e",
		"granule_sns_topic_arn": "arn:aws:sns:us-east-1:123456789012:g", "pdr_sns_topic_arn": "arn:aws:sns:us-east-1:123456789012:p"}
	for _, name := range []string{"badport", "refused", "broken", "missing"} {
		t.Run(name, func(t *testing.T) {
			rt := lambdart.Start(t, lambdart.Function{Bootstrap: bin, Env: lambdart.Env(lambdart.ServiceEnv(t, "sqs", "sns", "s3"), topics,
				map[string]string{"databaseCredentialSecretArn": arn(name), "AWS_ENDPOINT_URL_SECRETS_MANAGER": sm.URL, "system_bucket": "demo-internal"})})
			_, err := rt.Invoke(context.Background(), []byte(`{"Records":[]}`))
			if !errors.Is(err, lambdart.ErrInitFailed) {
				t.Fatalf("invoke error %v, want a failed init", err)
			}
			if strings.Contains(err.Error(), pw) || strings.Contains(string(rt.Logs()), pw) {
				t.Errorf("the password is shown:\n%s\n%s", err, rt.Logs())
			}
			if !strings.Contains(err.Error(), `databaseCredentialSecretArn="`+arn(name)+`"`) {
				t.Errorf("the init error does not name the variable and its value: %v", err)
			}
		})
	}
}
