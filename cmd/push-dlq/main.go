// Command push-dlq is the push-dlq Lambda function (runtime provided.al2023,
// handler bootstrap): it replays the slice of the push DLQ its environment
// selects and parks the rest. See docs/processors.md.
package main

import (
	"context"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/deadletter/deadletter/internal/processor/lambdainit"
	"github.com/deadletter/deadletter/internal/processor/pushdlq"
)

func main() {
	h, err := pushdlq.New(context.Background(), os.Getenv, os.Stdout)
	if err != nil {
		lambdainit.Fail(err) // a failed cold start, naming the variable and its value
	}
	lambda.Start(h.Handle)
}
