// Command write-db-dlq-records-to-s3 is the DLA archiver Lambda, in place
// of Cumulus's writeDbRecordsDLQtoS3 (see internal/processor/dlawriter and
// docs/processors.md). Built as `bootstrap` for the provided.al2023 runtime.
package main

import (
	"context"
	"os"

	"github.com/deadletter/deadletter/internal/processor/dlawriter"
	"github.com/deadletter/deadletter/internal/processor/lambdastart"
)

func main() {
	lambdastart.Run("write-db-dlq-records-to-s3", func(ctx context.Context) (any, error) {
		p, err := dlawriter.New(ctx, os.Getenv)
		if err != nil {
			return nil, err
		}
		return p.Handle, nil
	})
}
