// Package athenarun runs one Athena query to its end through aws-sdk-go-v2:
// StartQueryExecution, GetQueryExecution polled with backoff (with a
// progress callback and a guard on the bytes scanned), then GetQueryResults
// page by page. A query it started is stopped (StopQueryExecution) when the
// caller gives up: an interrupt, the scan guard, or a polling error.
package athenarun

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/athena"
	"github.com/aws/aws-sdk-go-v2/service/athena/types"
)

// API is the part of the Athena client a query needs.
type API interface {
	StartQueryExecution(context.Context, *athena.StartQueryExecutionInput, ...func(*athena.Options)) (*athena.StartQueryExecutionOutput, error)
	GetQueryExecution(context.Context, *athena.GetQueryExecutionInput, ...func(*athena.Options)) (*athena.GetQueryExecutionOutput, error)
	GetQueryResults(context.Context, *athena.GetQueryResultsInput, ...func(*athena.Options)) (*athena.GetQueryResultsOutput, error)
	StopQueryExecution(context.Context, *athena.StopQueryExecutionInput, ...func(*athena.Options)) (*athena.StopQueryExecutionOutput, error)
}

// Runner runs queries in one workgroup and database.
type Runner struct {
	Client    API
	Workgroup string
	Database  string
	// MaxScanBytes stops a query whose scan passes it (0: no limit).
	MaxScanBytes int64
	// PollMin and PollMax bound the wait between two GetQueryExecution
	// calls; it doubles from PollMin (defaults 250 ms and 5 s).
	PollMin, PollMax time.Duration
	// Progress, when set, is called after every poll.
	Progress func(Status)
	// PageSize is GetQueryResults's MaxResults (default and most: 1000).
	PageSize int32
}

// Status is a query's state as last polled.
type Status struct {
	ID      string
	State   types.QueryExecutionState
	Reason  string // StateChangeReason, for FAILED and CANCELLED
	Scanned int64  // bytes
	Elapsed time.Duration
}

// Cost is the estimated charge of a query's scan, in US dollars: 5 per TB,
// with the 10 MB a query is charged at least.
func (s Status) Cost() float64 {
	return float64(max(s.Scanned, 10_000_000)) / 1e12 * 5
}

// QueryError is a query that ended FAILED or CANCELLED.
type QueryError struct{ Status Status }

func (e *QueryError) Error() string {
	reason := e.Status.Reason
	if reason == "" {
		reason = "no reason given"
	}
	return fmt.Sprintf("Athena query %s %s: %s", e.Status.ID, e.Status.State, reason)
}

// ErrScanLimit: the query scanned more than MaxScanBytes and was stopped.
var ErrScanLimit = errors.New("the query scanned more than --max-scan-bytes and was stopped")

// stopTimeout bounds the StopQueryExecution sent after the caller's
// context is gone.
const stopTimeout = 10 * time.Second

// Run starts sql, waits for it, and hands every result row (the header row
// left out) to row; a nil value is SQL NULL. On an error after the start it
// stops the query when it may still be running. The status returned is the
// last one polled.
func (r *Runner) Run(ctx context.Context, sql string, row func([]*string) error) (Status, error) {
	st, err := r.Wait(ctx, sql)
	if err != nil {
		return st, err
	}
	return st, r.Results(ctx, st.ID, row)
}

// Wait starts sql and polls it until it succeeds.
func (r *Runner) Wait(ctx context.Context, sql string) (Status, error) {
	in := &athena.StartQueryExecutionInput{QueryString: aws.String(sql)}
	if r.Workgroup != "" {
		in.WorkGroup = aws.String(r.Workgroup)
	}
	if r.Database != "" {
		in.QueryExecutionContext = &types.QueryExecutionContext{Database: aws.String(r.Database)}
	}
	start := time.Now()
	out, err := r.Client.StartQueryExecution(ctx, in)
	if err != nil {
		return Status{}, fmt.Errorf("start the Athena query in workgroup %s: %w", r.Workgroup, err)
	}
	st := Status{ID: aws.ToString(out.QueryExecutionId), State: types.QueryExecutionStateQueued}
	wait := r.PollMin
	if wait <= 0 {
		wait = 250 * time.Millisecond
	}
	maxWait := r.PollMax
	if maxWait <= 0 {
		maxWait = 5 * time.Second
	}
	for {
		q, err := r.Client.GetQueryExecution(ctx, &athena.GetQueryExecutionInput{QueryExecutionId: aws.String(st.ID)})
		if err != nil {
			return st, r.stop(ctx, st, fmt.Errorf("poll Athena query %s: %w", st.ID, err))
		}
		st = status(st.ID, q.QueryExecution, time.Since(start))
		if r.Progress != nil {
			r.Progress(st)
		}
		switch st.State {
		case types.QueryExecutionStateSucceeded:
			return st, nil
		case types.QueryExecutionStateFailed, types.QueryExecutionStateCancelled:
			return st, &QueryError{Status: st}
		}
		if r.MaxScanBytes > 0 && st.Scanned > r.MaxScanBytes {
			return st, r.stop(ctx, st, fmt.Errorf("Athena query %s: %w (%d bytes scanned, limit %d)", st.ID, ErrScanLimit, st.Scanned, r.MaxScanBytes))
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return st, r.stop(ctx, st, ctx.Err())
		case <-t.C:
		}
		wait = min(2*wait, maxWait)
	}
}

// stop sends StopQueryExecution (on a context of its own: the caller's may
// be the one that was cancelled) and returns cause, with the stop's own
// failure added when it failed.
func (r *Runner) stop(ctx context.Context, st Status, cause error) error {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopTimeout)
	defer cancel()
	if _, err := r.Client.StopQueryExecution(sctx, &athena.StopQueryExecutionInput{QueryExecutionId: aws.String(st.ID)}); err != nil {
		return fmt.Errorf("%w; and stopping query %s failed, stop it in the console: %v", cause, st.ID, err)
	}
	return cause
}

func status(id string, q *types.QueryExecution, elapsed time.Duration) Status {
	st := Status{ID: id, Elapsed: elapsed}
	if q == nil {
		return st
	}
	if q.Status != nil {
		st.State = q.Status.State
		st.Reason = aws.ToString(q.Status.StateChangeReason)
		if e := q.Status.AthenaError; e != nil && st.Reason == "" {
			st.Reason = aws.ToString(e.ErrorMessage)
		}
	}
	if q.Statistics != nil {
		st.Scanned = aws.ToInt64(q.Statistics.DataScannedInBytes)
	}
	return st
}

// Results pages through a succeeded query's rows. The first row of the
// first page is the header Athena adds to a SELECT's results when it names
// the columns; it is left out.
func (r *Runner) Results(ctx context.Context, id string, row func([]*string) error) error {
	size := r.PageSize
	if size <= 0 || size > 1000 {
		size = 1000
	}
	in := &athena.GetQueryResultsInput{QueryExecutionId: aws.String(id), MaxResults: aws.Int32(size)}
	first := true
	seen := map[string]bool{}
	for {
		out, err := r.Client.GetQueryResults(ctx, in)
		if err != nil {
			return fmt.Errorf("read the results of Athena query %s: %w", id, err)
		}
		if out.ResultSet != nil {
			rows := out.ResultSet.Rows
			if first && len(rows) > 0 && isHeader(rows[0], out.ResultSet.ResultSetMetadata) {
				rows = rows[1:]
			}
			for _, rw := range rows {
				vals := make([]*string, len(rw.Data))
				for i, d := range rw.Data {
					vals[i] = d.VarCharValue
				}
				if err := row(vals); err != nil {
					return err
				}
			}
		}
		first = false
		next := aws.ToString(out.NextToken)
		if next == "" {
			return nil
		}
		if seen[next] { // the pages loop: the same rows would come again
			return fmt.Errorf("read the results of Athena query %s: a page token came back twice; the results stop here", id)
		}
		seen[next] = true
		in.NextToken = out.NextToken
	}
}

func isHeader(rw types.Row, meta *types.ResultSetMetadata) bool {
	if meta == nil || len(meta.ColumnInfo) != len(rw.Data) {
		return false
	}
	for i, c := range meta.ColumnInfo {
		if aws.ToString(rw.Data[i].VarCharValue) != aws.ToString(c.Name) {
			return false
		}
	}
	return true
}
