// Command write-db-dlq-records-to-s3 is the DLA archiver Lambda, in place
// of Cumulus's writeDbRecordsDLQtoS3 (see internal/processor/dlawriter and
// docs/processors.md). Built as `bootstrap` for the provided.al2023 runtime.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/deadletter/deadletter/internal/processor/dlawriter"
)

func main() {
	p, err := dlawriter.New(context.Background(), os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	lambda.Start(p.Handle)
}
