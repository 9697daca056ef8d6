package athenarun

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/athena"
	"github.com/aws/aws-sdk-go-v2/service/athena/types"

	"github.com/deadletter/deadletter/internal/testsupport/fakeathena"
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

// Results follows NextToken without remembering the tokens it
// was given: a token that comes back (a -> b -> a) makes it hand the same
// rows to the caller again and again, so `dla search --engine athena -o
// keys | dla recover -` would feed the same keys to recover without end.
// It should stop with an error on a token it has seen.
// DEFECT (athenarun.go Results: no guard on repeated NextToken).
func TestResultsStopsOnALoopingToken(t *testing.T) {
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

// An interrupt while the query runs, with every
// StopQueryExecution throttled past the SDK's retries, still returns (the
// stop has its own deadline), keeps the interrupt as the cause, and names
// the query to stop by hand. Through the real SDK and fakeathena.
func TestInterruptWithStopFailingStillReturns(t *testing.T) {
	fake := fakeathena.New(t, func(string) fakeathena.Execution { return fakeathena.Execution{States: []string{"QUEUED", "RUNNING"}} })
	fake.Throttle("StopQueryExecution", 1000)
	r := runner(fake)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r.Progress = func(s Status) {
		if s.State == types.QueryExecutionStateRunning {
			cancel()
		}
	}
	_, err := r.Run(ctx, "SELECT 1", func([]*string) error { return nil })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want the interrupt as its cause", err)
	}
	id := fake.Started()[0].ID
	if !strings.Contains(err.Error(), id) || !strings.Contains(err.Error(), "stop it in the console") {
		t.Fatalf("err = %v: does not name query %s to stop by hand", err, id)
	}
	if fake.Calls("StopQueryExecution") < 2 {
		t.Fatalf("StopQueryExecution called %d times: the SDK did not retry it", fake.Calls("StopQueryExecution"))
	}
}
