package dlarecover

import (
	"context"
	"time"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/selection"
	"github.com/deadletter/deadletter/internal/workflow/dbwrite"
)

// DryRunOptions are what a dry run takes beyond its path, store and scope.
type DryRunOptions struct {
	// InOrder writes the objects one after another in one transaction,
	// each against the rows the ones before it left (dryRunInOrder),
	// instead of each in a transaction of its own.
	InOrder bool
	Now     func() time.Time   // default time.Now
	Explain func(error) string // as Run's
}

// DryRun is recover's dry run of scope's objects on path (opened by
// dbwrite.Open): each object unwrapped and written in a transaction
// rolled back, nothing moved or deleted, no lock taken; emit is called
// with each object's result, as the run would have it. It is the one door
// for every caller that asks "what would recover do now": dla triage's
// probe, dla trace, and autorecover's probe. An environment error (the
// database refusing) stops it with a *StoppedError, as it stops recover.
func DryRun(ctx context.Context, path *dbwrite.Path, store archive.Store, scope selection.Scope, emit func(Object) error, o DryRunOptions) error {
	n := len(scope.Keys)
	r := &recoverRun{Store: store, Layout: scope.Layout, DB: path.DB, Pool: path.Database.Pool, Writer: path.Writer,
		DryRun: true, Concurrency: 1, Now: o.Now, Explain: o.Explain, Sum: &Summary{Selected: n}}
	if r.Now == nil {
		r.Now = time.Now
	}
	if o.InOrder {
		return r.dryRunInOrder(ctx, scope, emit)
	}
	return r.runScope(ctx, scope, emit)
}
