package sfevent

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/deadletter/deadletter/internal/awsconfig"
	"github.com/deadletter/deadletter/internal/awsread"
	"github.com/deadletter/deadletter/internal/cumulusdb"
	"github.com/deadletter/deadletter/internal/processor/jsonlog"
	"github.com/deadletter/deadletter/internal/recovery"
	"github.com/deadletter/deadletter/internal/snspub"
)

// New builds the handler at cold start: the database pool (kept for the
// life of the function instance, so warm invocations reuse its
// connections), and the Step Functions, S3 and SQS clients.
func New(ctx context.Context, cfg Config) (*Handler, error) {
	awsCfg, err := awsconfig.Load(ctx, awsconfig.Settings{})
	if err != nil {
		return nil, err
	}
	settings := awsconfig.Settings{}
	poolCfg, err := cumulusdb.Configure(ctx, cfg.DatabaseURL, cfg.DBSecret, cfg.MaxPool, func(ctx context.Context, id string) ([]byte, error) {
		return awsconfig.SecretText(ctx, awsconfig.SecretsManager(awsCfg, settings), id)
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cfg.databaseVar(), err)
	}
	// Idle connections close before Lambda freezes the instance for long;
	// a connection found dead is replaced, not used.
	poolCfg.MaxConnIdleTime = 5 * time.Minute
	poolCfg.HealthCheckPeriod = time.Minute
	// The same setup as dla recover's: the schema generation read from
	// the catalog, and the database checked writable, at cold start.
	db, err := cumulusdb.Open(ctx, poolCfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cfg.databaseVar(), err)
	}
	pool := db.Pool
	jsonlog.Line(os.Stdout, struct {
		Type     string `json:"type"`
		Database string `json:"database"`
		Schema   string `json:"schema"`
	}{"cold_start", db.Target, string(db.Generation)})
	pub, err := snspub.New(awsconfig.SNS(awsCfg, settings), cfg.Topics)
	if err != nil {
		pool.Close()
		return nil, err
	}
	return &Handler{
		Writer: recovery.Writer{
			DB:       db.DB(),
			SFN:      awsread.StepFunctions{Client: awsconfig.SFN(awsCfg, settings)},
			Objects:  awsread.Objects{Client: awsconfig.S3(awsCfg, settings), ReplaceBucket: cfg.SystemBucket},
			Region:   awsCfg.Region,
			Now:      time.Now,
			Notifier: pub,
		},
		SQS:             awsconfig.SQS(awsCfg, settings),
		DeadLetterQueue: cfg.DeadLetterQueue,
		Concurrency:     cfg.MaxPool,
		Log:             os.Stdout,
	}, nil
}

// databaseVar names the variable the database came from, for a cold start
// that fails on it: the secret's ARN is shown, the connection string is
// not (it may hold a password; cumulusdb.Target shows it without one).
func (c Config) databaseVar() string {
	if c.DatabaseURL != "" {
		return EnvDatabaseURL
	}
	return fmt.Sprintf("%s=%q", EnvDBSecret, c.DBSecret)
}
