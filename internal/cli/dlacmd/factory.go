// Package dlacmd is the cobra wiring of the dla command: one file per verb,
// each with an Options struct and a run function that tests can call.
package dlacmd

import (
	"context"
	"errors"
	"time"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/athenarun"
	"github.com/deadletter/deadletter/internal/awsconfig"
	"github.com/deadletter/deadletter/internal/cli/cmdutil"
	"github.com/deadletter/deadletter/internal/cli/iostreams"
	"github.com/deadletter/deadletter/internal/dla"
)

// Factory holds what commands need, built lazily so that a command that
// never touches AWS never loads AWS configuration.
type Factory struct {
	IO     *iostreams.IOStreams
	AWS    *awsconfig.Settings
	Now    func() time.Time
	Getenv func(string) string
	// OpenBucket opens the whole bucket or directory an archive lives in.
	// Commands never use it directly: they go through OpenStore, which
	// limits every key to the archive.
	OpenBucket func(ctx context.Context, loc archive.Location) (archive.Store, error)
	// OpenAthena returns the Athena client of --engine athena.
	OpenAthena func(ctx context.Context) (athenarun.API, error)
	// APIPoll, when set, replaces every wait of recover --via-api (its
	// polls and retries): tests make them short.
	APIPoll time.Duration
}

// apiPoll is a wait of recover --via-api: d, unless the factory sets one.
func (f *Factory) apiPoll(d time.Duration) time.Duration {
	if f.APIPoll > 0 {
		return f.APIPoll
	}
	return d
}

// NewFactory returns the production factory.
func NewFactory(ios *iostreams.IOStreams, getenv func(string) string) *Factory {
	f := &Factory{IO: ios, AWS: &awsconfig.Settings{}, Now: time.Now, Getenv: getenv}
	f.OpenBucket = func(ctx context.Context, loc archive.Location) (archive.Store, error) {
		if loc.Bucket == "" {
			return archive.NewLocal(loc.Dir)
		}
		cfg, err := awsconfig.Load(ctx, *f.AWS)
		if err != nil {
			return nil, err
		}
		return archive.NewS3(awsconfig.S3(cfg, *f.AWS), loc.Bucket), nil
	}
	f.OpenAthena = defaultOpenAthena(f)
	return f
}

// OpenStore opens the archive at loc, contained: every key any command
// reads, writes, copies or deletes through it must lie under
// "<stack>/dead-letter-archive/" (archive.CheckKey). This is the one place
// that check is made.
func (f *Factory) OpenStore(ctx context.Context, loc archive.Location) (archive.Store, error) {
	s, err := f.OpenBucket(ctx, loc)
	if err != nil {
		return nil, err
	}
	return archive.Contain(s, dla.Layout{Stack: loc.Stack}.Root()), nil
}

// OpenArchive is OpenStore for commands that read an existing archive: an
// S3 stack with nothing under its dead-letter-archive/ is a usage error
// naming the stacks of the bucket that have one (a local one is checked
// when --archive is parsed).
func (f *Factory) OpenArchive(ctx context.Context, loc archive.Location) (archive.Store, error) {
	s, err := f.OpenBucket(ctx, loc)
	if err != nil {
		return nil, err
	}
	if loc.Bucket != "" {
		var none *archive.NoArchiveError
		if err := archive.RequireArchive(ctx, s, loc.Stack); errors.As(err, &none) {
			return nil, cmdutil.UsageErrorf("%v", err)
		} else if err != nil {
			return nil, err
		}
	}
	layout := dla.Layout{Stack: loc.Stack}
	store := archive.Contain(s, layout.Root())
	// Objects a --via-api run left in staging are seen by no verb: say so.
	warnStaging(ctx, f, store, layout, loc.String())
	return store, nil
}
