package sfevent

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/deadletter/deadletter/internal/awsconfig"
	"github.com/deadletter/deadletter/internal/processor/jsonlog"
	"github.com/deadletter/deadletter/internal/workflow/dbwrite"
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
	// The same setup as dla recover's (dbwrite.Open): the schema
	// generation read from the catalog and the database checked writable
	// at cold start, the adapter of that generation, the same readers.
	path, err := dbwrite.Open(ctx, dbwrite.Config{
		DatabaseURL: cfg.DatabaseURL, DBSecret: cfg.DBSecret, MaxConns: cfg.MaxPool,
		Tune: func(p *pgxpool.Config) {
			// Idle connections close before Lambda freezes the instance for
			// long; a connection found dead is replaced, not used.
			p.MaxConnIdleTime = 5 * time.Minute
			p.HealthCheckPeriod = time.Minute
		},
		AWS:      func() (aws.Config, error) { return awsCfg, nil },
		Settings: settings, ReplaceBucket: cfg.SystemBucket, Topics: cfg.Topics, Now: time.Now,
	})
	switch dbwrite.StageOf(err) {
	case "":
	case dbwrite.StageTopics, dbwrite.StageNotifier, dbwrite.StageReads:
		return nil, err
	default:
		return nil, fmt.Errorf("%s: %w", cfg.databaseVar(), err)
	}
	jsonlog.Line(os.Stdout, struct {
		Type     string `json:"type"`
		Database string `json:"database"`
		Schema   string `json:"schema"`
	}{"cold_start", path.Database.Target, string(path.Database.Generation)})
	return &Handler{
		Writer:          *path.Writer,
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
