// Command push-dlq is the push-dlq Lambda function (provided.al2023,
// handler "bootstrap"): it replays the slice of the push DLQ its
// environment selects and parks the rest. See docs/processors.md.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/deadletter/deadletter/internal/processor/pushdlq"
)

func main() {
	h, err := pushdlq.New(context.Background(), os.Getenv, os.Stdout)
	if err != nil {
		// aws-lambda-go has no init-error call: a bootstrap that exits
		// before lambda.Start is reported by Lambda as an init failure
		// (Runtime.ExitError), with this line in the function's log.
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	lambda.Start(h.Handle)
}
