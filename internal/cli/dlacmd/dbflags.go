package dlacmd

import (
	"cmp"
	"context"
	"errors"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/awsconfig"
	"github.com/deadletter/deadletter/internal/cli/cmdutil"
	"github.com/deadletter/deadletter/internal/cumulusdb"
	"github.com/deadletter/deadletter/internal/workflow/dbwrite"
)

// The database flags of recover, trace and triage: --database-url (else
// $DATABASE_URL, else the PG* variables) or --db-secret, never both; and
// the refusal of a database none of them will write to.

// checkDBFlags is the usage error of --database-url and --db-secret given
// together.
func checkDBFlags(url, secret string) error {
	if url != "" && secret != "" {
		return cmdutil.UsageErrorf("--database-url and --db-secret cannot be combined")
	}
	return nil
}

// dbURL is the connection string of --database-url, else $DATABASE_URL
// ("" then: the PG* variables, or the secret).
func dbURL(f *Factory, flag string) string {
	return cmp.Or(flag, f.Getenv("DATABASE_URL"))
}

// openDryRunPath opens the write path of the database the flags name for
// a dry run (trace's, triage's probe: every write rolled back): two
// connections, `replace` payloads read from the archive's bucket only,
// and no Step Functions or S3 reads when offline.
func openDryRunPath(ctx context.Context, f *Factory, url, secret string, offline bool, loc archive.Location) (*dbwrite.Path, error) {
	return dbwrite.Open(ctx, dbwrite.Config{
		DatabaseURL: dbURL(f, url), DBSecret: secret, MaxConns: 2,
		AWS:      func() (aws.Config, error) { return awsconfig.Load(ctx, *f.AWS) },
		Settings: *f.AWS, Offline: offline, ReplaceBucket: loc.Bucket, Now: f.Now,
	})
}

// refuseDatabase is the error of a database recover will not write: a
// schema it does not know is a usage error (exit 2), as a wrong flag is;
// the rest (unreachable, read-only, privileges) a failure.
func refuseDatabase(err error) error {
	var se *cumulusdb.SchemaError
	if errors.As(err, &se) {
		return &cmdutil.ExitError{Code: cmdutil.ExitUsage, Err: err}
	}
	return err
}
