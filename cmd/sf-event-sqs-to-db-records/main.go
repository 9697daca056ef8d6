// Command sf-event-sqs-to-db-records is the db-writer Lambda: Cumulus's
// sfEventSqsToDbRecords on the write core `dla recover` uses. See
// docs/processors.md.
package main

import (
	"context"
	"os"

	"github.com/deadletter/deadletter/internal/processor/lambdastart"
	"github.com/deadletter/deadletter/internal/processor/sfevent"
)

func main() {
	lambdastart.Run("sf-event-sqs-to-db-records", func(ctx context.Context) (any, error) {
		cfg, err := sfevent.LoadConfig(os.Getenv)
		if err != nil {
			return nil, err
		}
		h, err := sfevent.New(ctx, cfg)
		if err != nil {
			return nil, err
		}
		return h.Handle, nil
	})
}
