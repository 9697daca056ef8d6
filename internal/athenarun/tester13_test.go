package athenarun

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/athena"
	"github.com/aws/aws-sdk-go-v2/service/athena/types"
)

// loopingPages answers GetQueryResults with one row and a NextToken that
// cycles ("a", "b", "a", ...): a service (or proxy) bug that Results
// follows for ever.
type loopingPages struct {
	API
	calls int
}

func (l *loopingPages) GetQueryResults(_ context.Context, in *athena.GetQueryResultsInput, _ ...func(*athena.Options)) (*athena.GetQueryResultsOutput, error) {
	l.calls++
	next := "a"
	if aws.ToString(in.NextToken) == "a" {
		next = "b"
	}
	return &athena.GetQueryResultsOutput{NextToken: aws.String(next), ResultSet: &types.ResultSet{
		Rows: []types.Row{{Data: []types.Datum{{VarCharValue: aws.String("s3://b/stack/dead-letter-archive/sqs/2024-03-01/k")}}}},
	}}, nil
}

var errTooMany = errors.New("too many rows")

// tester13: Results follows NextToken without remembering the tokens it
// was given: a token that comes back (a -> b -> a) makes it hand the same
// rows to the caller again and again, so `dla search --engine athena -o
// keys | dla recover -` would feed the same keys to recover without end.
// It should stop with an error on a token it has seen.
// DEFECT (athenarun.go Results: no guard on repeated NextToken).
func TestTester13ResultsStopsOnALoopingToken(t *testing.T) {
	api := &loopingPages{}
	r := &Runner{Client: api}
	rows := 0
	err := r.Results(context.Background(), "q-1", func([]*string) error {
		if rows++; rows > 100 {
			return errTooMany
		}
		return nil
	})
	if errors.Is(err, errTooMany) {
		t.Fatalf("Results handed the same row %d times over %d pages whose tokens loop (a, b, a, ...), and would go on", rows-1, api.calls)
	}
	if err == nil {
		t.Fatalf("Results ended without error after %d rows of a looping result", rows)
	}
}
