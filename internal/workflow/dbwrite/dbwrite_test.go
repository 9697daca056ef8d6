package dbwrite_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/deadletter/deadletter/internal/awsconfig"
	"github.com/deadletter/deadletter/internal/cumulusdb"
	"github.com/deadletter/deadletter/internal/snspub"
	"github.com/deadletter/deadletter/internal/testsupport"
	"github.com/deadletter/deadletter/internal/workflow/dbwrite"
)

// Each failure of the setup names its stage, so that the CLI and the
// processor can each say what to check; nothing needs AWS that was not
// asked for.
func TestOpenNamesTheStageThatFailed(t *testing.T) {
	ctx := context.Background()
	noAWS := func() (aws.Config, error) { return aws.Config{}, errors.New("no AWS here") }
	for _, c := range []struct {
		name string
		cfg  dbwrite.Config
		want dbwrite.Stage
	}{
		{"connection string", dbwrite.Config{DatabaseURL: "postgres://x:%zz@h/db", Offline: true}, dbwrite.StageConnString},
		{"secret without AWS", dbwrite.Config{DBSecret: "db-login", AWS: noAWS, Offline: true}, dbwrite.StageSecret},
		{"reads without AWS", dbwrite.Config{DatabaseURL: "postgres://x@127.0.0.1:1/db", AWS: noAWS}, dbwrite.StageReads},
		{"topics not all given", dbwrite.Config{DatabaseURL: "postgres://x@127.0.0.1:1/db", Offline: true,
			AWS:    func() (aws.Config, error) { return aws.Config{Region: "us-east-1"}, nil },
			Topics: snspub.Topics{Execution: "arn:aws:sns:us-east-1:1:e"}}, dbwrite.StageTopics},
		{"unreachable database", dbwrite.Config{DatabaseURL: "postgres://x@127.0.0.1:1/db?connect_timeout=5", Offline: true}, dbwrite.StageDatabase},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := dbwrite.Open(ctx, c.cfg)
			if got := dbwrite.StageOf(err); got != c.want {
				t.Fatalf("stage %q (%v), want %q", got, err, c.want)
			}
		})
	}
}

// Open gives the writer the adapter of the generation the catalog holds,
// and Tune sees the pool's configuration before it connects.
func TestOpenWritesTheGenerationItFinds(t *testing.T) {
	for _, gen := range []cumulusdb.Generation{cumulusdb.V21, cumulusdb.V22_3} {
		t.Run(string(gen), func(t *testing.T) {
			url := testsupport.NewCumulusDatabaseOf(t, gen, nil)
			tuned := false
			p, err := dbwrite.Open(context.Background(), dbwrite.Config{DatabaseURL: url, Offline: true, MaxConns: 3,
				Tune: func(c *pgxpool.Config) { tuned = c.MaxConns == 3 }})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			db, ok := p.Writer.DB.(*cumulusdb.DB)
			if !ok || db.Generation() != gen || p.Database.Generation != gen || !tuned {
				t.Fatalf("writer on %T %v, database %s, tuned %v; want %s", p.Writer.DB, db, p.Database.Generation, tuned, gen)
			}
			if p.Writer.SFN != nil || p.Writer.Objects != nil || p.Writer.Notifier != nil || p.Writer.Region != "us-east-1" {
				t.Fatalf("offline writer reads AWS: %+v", p.Writer)
			}
			// v22's statements run on generic plans (cumulusdb.Open).
			var mode string
			if err := p.Database.Pool.QueryRow(context.Background(), `SHOW plan_cache_mode`).Scan(&mode); err != nil {
				t.Fatal(err)
			}
			if want := map[bool]string{true: "force_generic_plan", false: "auto"}[gen.Partitioned()]; mode != want {
				t.Fatalf("plan_cache_mode %s, want %s", mode, want)
			}
		})
	}
}

// The region of execution URLs is the configuration's, but us-east-1
// (v21's default) without one, or with Step Functions on a local endpoint.
func TestRegion(t *testing.T) {
	t.Setenv("AWS_ENDPOINT_URL", "")
	t.Setenv("AWS_ENDPOINT_URL_SFN", "")
	if r := dbwrite.Region(&aws.Config{Region: "eu-west-1"}, awsconfig.Settings{}); r != "eu-west-1" {
		t.Errorf("configured: %s", r)
	}
	if r := dbwrite.Region(nil, awsconfig.Settings{}); r != "us-east-1" {
		t.Errorf("none: %s", r)
	}
	if r := dbwrite.Region(&aws.Config{Region: "eu-west-1"}, awsconfig.Settings{EndpointURL: "http://127.0.0.1:1"}); r != "us-east-1" {
		t.Errorf("local endpoint: %s", r)
	}
}
