package autorecover

import (
	"context"
	"errors"

	"github.com/deadletter/deadletter/internal/cumulusdb"
	"github.com/deadletter/deadletter/internal/recovery"
	"github.com/deadletter/deadletter/internal/selection"
	"github.com/deadletter/deadletter/internal/workflow/dlarecover"
)

// dryRun is recover's dry run (dlarecover.DryRun) of scope's objects on
// the pass's database, opened offline: every write in a transaction rolled
// back, no Step Functions or S3 reads, nothing moved.
func dryRun(ctx context.Context, p *pass, scope selection.Scope, emit func(dlarecover.Object) error) error {
	return dlarecover.DryRun(ctx, p.path, p.c.Store, scope, emit, dlarecover.DryRunOptions{Now: p.c.Now, Explain: p.c.Explain})
}

// isEnvironment reports whether err is a failure of the database or of
// AWS rather than of the messages, as recover decides it.
func isEnvironment(err error) bool {
	var env *cumulusdb.EnvironmentError
	return recovery.IsTransient(err) || errors.As(err, &env)
}
