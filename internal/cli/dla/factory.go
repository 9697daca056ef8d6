// Package dla is the cobra wiring of the dla command: one file per verb,
// each with an Options struct and a run function that tests can call.
package dla

import (
	"context"
	"time"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/awsconfig"
	"github.com/deadletter/deadletter/internal/cli/iostreams"
)

// Factory holds what commands need, built lazily so that a command that
// never touches AWS never loads AWS configuration.
type Factory struct {
	IO        *iostreams.IOStreams
	AWS       *awsconfig.Settings
	Now       func() time.Time
	Getenv    func(string) string
	OpenStore func(ctx context.Context, loc archive.Location) (archive.Store, error)
}

// NewFactory returns the production factory.
func NewFactory(ios *iostreams.IOStreams, getenv func(string) string) *Factory {
	f := &Factory{IO: ios, AWS: &awsconfig.Settings{}, Now: time.Now, Getenv: getenv}
	f.OpenStore = func(ctx context.Context, loc archive.Location) (archive.Store, error) {
		if loc.Bucket == "" {
			return archive.NewLocal(loc.Dir)
		}
		cfg, err := awsconfig.Load(ctx, *f.AWS)
		if err != nil {
			return nil, err
		}
		return archive.NewS3(awsconfig.S3(cfg, *f.AWS), loc.Bucket), nil
	}
	return f
}
