// Command dla-autorecover is the autorecover Lambda: one pass of `dla
// autorecover` per invocation, on a schedule (EventBridge Scheduler),
// report mode unless AUTORECOVER_MODE=recover. See docs/autorecover.md.
package main

import (
	"context"
	"os"

	"github.com/deadletter/deadletter/internal/processor/autorecoverfn"
	"github.com/deadletter/deadletter/internal/processor/lambdastart"
)

func main() {
	lambdastart.Run("dla-autorecover", func(ctx context.Context) (any, error) {
		cfg, err := autorecoverfn.LoadConfig(os.Getenv)
		if err != nil {
			return nil, err
		}
		h, err := autorecoverfn.New(ctx, cfg, os.Stdout)
		if err != nil {
			return nil, err
		}
		return h.Handle, nil
	})
}
