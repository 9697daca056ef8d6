package sfevent

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/deadletter/deadletter/internal/awsconfig"
	"github.com/deadletter/deadletter/internal/awsread"
	"github.com/deadletter/deadletter/internal/cumulusdb"
	"github.com/deadletter/deadletter/internal/recovery"
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
		return nil, err
	}
	// Idle connections close before Lambda freezes the instance for long;
	// a connection found dead is replaced, not used.
	poolCfg.MaxConnIdleTime = 5 * time.Minute
	poolCfg.HealthCheckPeriod = time.Minute
	pool, err := pgxpool.NewWithConfig(ctx, poolCfg)
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", cumulusdb.Target(poolCfg), err)
	}
	if err := cumulusdb.CheckTables(ctx, pool); err != nil {
		pool.Close()
		return nil, fmt.Errorf("%s: %w", cumulusdb.Target(poolCfg), err)
	}
	return &Handler{
		Writer: recovery.Writer{
			DB:      cumulusdb.New(pool),
			SFN:     awsread.StepFunctions{Client: awsconfig.SFN(awsCfg, settings)},
			Objects: awsread.Objects{Client: awsconfig.S3(awsCfg, settings), ReplaceBucket: cfg.SystemBucket},
			Region:  awsCfg.Region,
			Now:     time.Now,
		},
		SQS:             awsconfig.SQS(awsCfg, settings),
		DeadLetterQueue: cfg.DeadLetterQueue,
		Concurrency:     cfg.MaxPool,
		Log:             os.Stdout,
	}, nil
}
