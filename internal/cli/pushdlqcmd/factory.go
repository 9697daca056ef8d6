// Package pushdlqcmd is the cobra wiring of the pushdlq command: one file per
// verb, each with an Options struct and a run function that tests can call.
package pushdlqcmd

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/deadletter/deadletter/internal/awsconfig"
	"github.com/deadletter/deadletter/internal/cli/cmdutil"
	"github.com/deadletter/deadletter/internal/cli/iostreams"
	"github.com/deadletter/deadletter/internal/lambdactl"
	"github.com/deadletter/deadletter/internal/sqsmove"
)

// Factory holds what commands need, built lazily so that a command that
// never touches AWS never loads AWS configuration.
type Factory struct {
	IO     *iostreams.IOStreams
	AWS    *awsconfig.Settings
	Now    func() time.Time
	Getenv func(string) string
	// SQS returns the client and a description of where it points
	// (profile, region, endpoint; never a secret).
	SQS func(ctx context.Context) (sqsmove.API, string, error)
	// StateDir is where journals go by default.
	StateDir func() (string, error)
	// Lambda returns the Lambda client of pushdlq processor.
	Lambda func(ctx context.Context) (lambdactl.API, error)
	// Poll is how often pushdlq processor reads a function whose update is
	// in progress (default 2 s).
	Poll time.Duration
}

func (f *Factory) pollInterval() time.Duration {
	if f.Poll > 0 {
		return f.Poll
	}
	return 2 * time.Second
}

// NewFactory returns the production factory.
func NewFactory(ios *iostreams.IOStreams, getenv func(string) string) *Factory {
	f := &Factory{IO: ios, AWS: &awsconfig.Settings{}, Now: time.Now, Getenv: getenv}
	f.SQS = func(ctx context.Context) (sqsmove.API, string, error) {
		cfg, err := awsconfig.Load(ctx, *f.AWS)
		if err != nil {
			return nil, "", err
		}
		return awsconfig.SQS(cfg, *f.AWS), awsconfig.Describe(cfg, *f.AWS, awsconfig.ServiceSQS), nil
	}
	f.Lambda = func(ctx context.Context) (lambdactl.API, error) {
		cfg, err := awsconfig.Load(ctx, *f.AWS)
		if err != nil {
			return nil, err
		}
		// --endpoint-url is for SQS here (a local SQS); Lambda follows
		// AWS_ENDPOINT_URL_LAMBDA, AWS_ENDPOINT_URL and the profile. With
		// the flag set and none of those, the Lambda calls would go to
		// AWS while the queues are read elsewhere: refused (exit 2),
		// before any request.
		if err := awsconfig.RequireOwnEndpoint(cfg, *f.AWS, "processor", awsconfig.ServiceSQS, awsconfig.ServiceLambda); err != nil {
			return nil, cmdutil.UsageErrorf("%w", err)
		}
		s := *f.AWS
		s.EndpointURL = ""
		return awsconfig.Lambda(cfg, s), nil
	}
	f.StateDir = func() (string, error) {
		dir := f.Getenv("XDG_STATE_HOME")
		if dir == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				return "", err
			}
			dir = filepath.Join(home, ".local", "state")
		}
		return filepath.Join(dir, "deadletter"), nil
	}
	return f
}
