// Package dbwrite sets up the write path that `dla recover` and the
// db-writer processor (sf-event-sqs-to-db-records) share: the Cumulus
// database (cumulusdb.Open: the schema generation read from the catalog,
// the checks that it can take the writes, the adapter of that generation)
// and the write core (recovery.Writer) with its Step Functions and S3
// readers and its notifier. Both call Open, so the two cannot assemble the
// writer differently (region, the bucket of `replace` payloads, the
// adapter).
package dbwrite

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/deadletter/deadletter/internal/awsconfig"
	"github.com/deadletter/deadletter/internal/awsread"
	"github.com/deadletter/deadletter/internal/cumulusdb"
	"github.com/deadletter/deadletter/internal/recovery"
	"github.com/deadletter/deadletter/internal/snspub"
)

// Config is what a write path is set up from.
type Config struct {
	// DatabaseURL is a connection string ("" reads the PG* variables);
	// DBSecret, when set, the Cumulus database secret (name or ARN) read
	// from Secrets Manager instead.
	DatabaseURL, DBSecret string
	// MaxConns bounds the pool (0: pgx's default).
	MaxConns int
	// Tune adjusts the pool's configuration before it connects (the
	// processor closes idle connections before Lambda freezes it).
	Tune func(*pgxpool.Config)
	// AWS returns the AWS configuration; it is called only when something
	// needs AWS (the secret, the reads, the notifier).
	AWS      func() (aws.Config, error)
	Settings awsconfig.Settings
	// Offline leaves out the Step Functions and S3 reads (processing
	// times, the failed step's output, CMR files, file sizes, `replace`
	// payloads).
	Offline bool
	// ReplaceBucket is the only bucket `replace` payloads are read from:
	// Cumulus's system bucket (for recover, the archive's bucket; none for
	// a local archive).
	ReplaceBucket string
	// Topics are the notification topics; none: nothing is published.
	Topics snspub.Topics
	Now    func() time.Time
}

// Path is a write path ready to write: the database and the writer on it.
type Path struct {
	Database *cumulusdb.Database
	DB       *cumulusdb.DB // the adapter of the database's generation, the Writer's DB
	Writer   *recovery.Writer
}

// Close closes the database pool.
func (p *Path) Close() { p.Database.Close() }

// Stage names the part of the setup an error came from, so that each
// caller can say what to check (an AWS failure while reading the secret is
// not one while building the readers).
type Stage string

const (
	StageConnString Stage = "connection string" // the connection string does not parse (cumulusdb.ErrConnString)
	StageSecret     Stage = "database secret"
	StageReads      Stage = "Step Functions and S3 reads"
	StageTopics     Stage = "SNS topics"        // the topics given cannot be published to (snspub.Topics.Validate)
	StageNotifier   Stage = "SNS notifications" // AWS could not be set up for the notifications
	StageDatabase   Stage = "database"
)

// Error is a setup failure and the stage it came from.
type Error struct {
	Stage Stage
	Err   error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// StageOf is the stage of a setup error ("" for another error).
func StageOf(err error) Stage {
	var e *Error
	if errors.As(err, &e) {
		return e.Stage
	}
	return ""
}

// Region is the region of execution URLs: the AWS configuration's, or
// us-east-1 (v21's default) when there is none or Step Functions is a
// local endpoint.
func Region(cfg *aws.Config, settings awsconfig.Settings) string {
	if cfg != nil && cfg.Region != "" && !settings.EndpointOverridden("SFN") {
		return cfg.Region
	}
	return "us-east-1"
}

// Open sets up the write path: the pool configuration (from the secret
// when one is given), the readers and the notifier, then the database,
// which is refused before anything is written when its schema is unknown
// or half migrated, it is read-only, or the role lacks a privilege
// (cumulusdb.Open).
func Open(ctx context.Context, c Config) (*Path, error) {
	var awsCfg *aws.Config
	loadAWS := func() (aws.Config, error) {
		if awsCfg == nil {
			if c.AWS == nil {
				return aws.Config{}, errors.New("no AWS configuration")
			}
			cfg, err := c.AWS()
			if err != nil {
				return cfg, err
			}
			awsCfg = &cfg
		}
		return *awsCfg, nil
	}
	poolCfg, err := cumulusdb.Configure(ctx, c.DatabaseURL, c.DBSecret, c.MaxConns, func(ctx context.Context, id string) ([]byte, error) {
		cfg, err := loadAWS()
		if err != nil {
			return nil, err
		}
		return awsconfig.SecretText(ctx, awsconfig.SecretsManager(cfg, c.Settings), id)
	})
	switch {
	case errors.Is(err, cumulusdb.ErrConnString):
		return nil, &Error{StageConnString, err}
	case err != nil:
		return nil, &Error{StageSecret, err}
	}
	if c.Tune != nil {
		c.Tune(poolCfg)
	}
	w := &recovery.Writer{Now: c.Now}
	if !c.Offline {
		cfg, err := loadAWS()
		if err != nil {
			return nil, &Error{StageReads, err}
		}
		w.SFN = awsread.StepFunctions{Client: awsconfig.SFN(cfg, c.Settings)}
		w.Objects = awsread.Objects{Client: awsconfig.S3(cfg, c.Settings), ReplaceBucket: c.ReplaceBucket}
	}
	w.Region = Region(awsCfg, c.Settings)
	if !c.Topics.None() {
		cfg, err := loadAWS()
		if err != nil {
			return nil, &Error{StageNotifier, err}
		}
		if w.Notifier, err = snspub.New(awsconfig.SNS(cfg, c.Settings), c.Topics); err != nil {
			return nil, &Error{StageTopics, err}
		}
	}
	db, err := cumulusdb.Open(ctx, poolCfg)
	if err != nil {
		return nil, &Error{StageDatabase, err}
	}
	adapter := db.DB()
	w.DB = adapter
	return &Path{Database: db, DB: adapter, Writer: w}, nil
}

// String names the database and its generation, for logs.
func (p *Path) String() string {
	return fmt.Sprintf("%s (Cumulus %s)", p.Database.Target, p.Database.Generation)
}
