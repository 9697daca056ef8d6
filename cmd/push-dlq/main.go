// Command push-dlq is the push-dlq Lambda function (runtime provided.al2023,
// handler bootstrap), not a CLI: it replays the slice of the push DLQ its
// environment selects and parks the rest. The operator CLI for the push DLQ
// is cmd/pushdlq. See docs/processors.md.
package main

import (
	"context"
	"os"

	"github.com/deadletter/deadletter/internal/processor/lambdastart"
	"github.com/deadletter/deadletter/internal/processor/pushdlq"
)

func main() {
	lambdastart.Run("push-dlq", func(ctx context.Context) (any, error) {
		h, err := pushdlq.New(ctx, os.Getenv, os.Stdout)
		if err != nil {
			return nil, err
		}
		return h.Handle, nil
	})
}
