package autorecover

import (
	"context"
	"errors"

	"github.com/deadletter/deadletter/internal/cumulusdb"
	"github.com/deadletter/deadletter/internal/recovery"
	"github.com/deadletter/deadletter/internal/selection"
	"github.com/deadletter/deadletter/internal/workflow/dlarecover"
)

// dryRun is recover's dry run of scope's objects on the pass's database:
// every write in a transaction rolled back, no Step Functions or S3 reads,
// nothing moved.
func dryRun(ctx context.Context, p *pass, scope selection.Scope, emit func(dlarecover.Object) error) error {
	run := &dlarecover.Run{Store: p.c.Store, Layout: scope.Layout, DB: p.path.DB, Pool: p.path.Database.Pool, Writer: p.path.Writer,
		DryRun: true, Concurrency: 1, Now: p.c.Now, Explain: p.c.Explain, Sum: &dlarecover.Summary{Selected: len(scope.Keys)}}
	return run.Run(ctx, scope, emit)
}

// isEnvironment reports whether err is a failure of the database or of
// AWS rather than of the messages, as recover decides it.
func isEnvironment(err error) bool {
	var env *cumulusdb.EnvironmentError
	return recovery.IsTransient(err) || errors.As(err, &env)
}
