package pushdlqcmd

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deadletter/deadletter/internal/cli/iostreams"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// A dry run from an export file that cannot reach SQS to check its target
// queues (the endpoint refuses, or there are no credentials) says so in one
// line, without the SDK's operation chain on each plan row, and exits with
// the documented code (docs/output-and-errors.md: 1 for an unreachable
// endpoint, 4 for credentials), not 0 with "nothing sent".
func TestReplayFromFileDryRunThatCannotReachSQSSaysWhyInOneLine(t *testing.T) {
	file := filepath.Join(t.TempDir(), "dlq.ndjson")
	// Two priorities: two target queues, two plan rows.
	lines := `{"message_id":"m1","body":"{\"priority\":1,\"createdAt\":1763109060000,\"errorCode\":1004}","message_attributes":{},"attributes":{}}
{"message_id":"m2","body":"{\"priority\":2,\"createdAt\":1763109120000,\"errorCode\":1004}","message_attributes":{},"attributes":{}}
`
	if err := os.WriteFile(file, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	fauxqs := testsupport.SQSEndpoint(t)
	for _, c := range []struct {
		name     string
		endpoint string
		env      map[string]string
		args     []string
		code     int
		want     string
	}{
		{"refused endpoint", "http://" + testsupport.ClosedPort(t), nil, nil, 1, "cannot reach the AWS endpoint http://127.0.0.1:"},
		{"no credentials", fauxqs, map[string]string{"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_SESSION_TOKEN": "",
			"AWS_WEB_IDENTITY_TOKEN_FILE": "", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "", "AWS_CONTAINER_CREDENTIALS_FULL_URI": ""}, nil, 4, "no AWS credentials found"},
		// No SQS client at all: none of the targets is checked.
		{"unknown profile", fauxqs, nil, []string{"--profile", "no-such-profile"}, 4, `AWS profile "no-such-profile" is not in the shared config`},
	} {
		t.Run(c.name, func(t *testing.T) {
			testsupport.SetAWSEnv(t, c.env) // no instance metadata, no shared files: nothing leaves 127.0.0.1
			ios, _, out, errOut := iostreams.Test()
			f := NewFactory(ios, os.Getenv)
			f.StateDir = func() (string, error) { return t.TempDir(), nil }
			code := Run(context.Background(), f, append([]string{"replay", "--from-file", file, "--endpoint-url", c.endpoint,
				"--queue-base-url", c.endpoint + "/000000000000/push-", "--window", "2025-11-14/2025-11-15", "--codes", "1004", "--dry-run"}, c.args...))
			stderr := errOut.String()
			t.Logf("exit %d\n%s", code, stderr)
			if code != c.code {
				t.Errorf("exit %d, want %d\n%s", code, c.code, stderr)
			}
			if n := strings.Count(stderr, c.want); n != 1 {
				t.Errorf("%d lines say %q, want one:\n%s", n, c.want, stderr)
			}
			for _, chain := range []string{"operation error", "exceeded maximum number of attempts", "get identity", "failed to refresh cached credentials", "https response error"} {
				if strings.Contains(stderr, chain) {
					t.Errorf("stderr carries the SDK chain (%q):\n%s", chain, stderr)
				}
			}
			if !strings.Contains(stderr, "eligible 2") {
				t.Errorf("the plan is not shown:\n%s", stderr)
			}
			if out.Len() != 0 {
				t.Errorf("a summary was printed for a dry run that could not check its targets:\n%s", out.String())
			}
		})
	}
}
