package athenarun

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/athena/types"

	"github.com/deadletter/deadletter/internal/awsconfig"
	"github.com/deadletter/deadletter/internal/testsupport"
	"github.com/deadletter/deadletter/internal/testsupport/fakeathena"
)

func runner(fake *fakeathena.Server) *Runner {
	client := awsconfig.Athena(testsupport.AWSConfig(), awsconfig.Settings{EndpointURL: fake.URL})
	return &Runner{Client: client, Workgroup: "wg", Database: "db", PollMin: time.Millisecond, PollMax: 5 * time.Millisecond}
}

func paths(n int) [][]*string {
	rows := make([][]*string, n)
	for i := range rows {
		rows[i] = []*string{aws.String(fmt.Sprintf("s3://b/k/%05d", i)), nil}
	}
	return rows
}

// Every row of a result over several pages arrives once, in order, the
// header row left out and NULL kept, through the real SDK.
func TestRunPagesThroughEveryRow(t *testing.T) {
	want := paths(2345)
	fake := fakeathena.New(t, func(string) fakeathena.Execution {
		return fakeathena.Execution{States: []string{"QUEUED", "RUNNING", "RUNNING", "SUCCEEDED"}, Scanned: []int64{0, 1 << 20, 5 << 20, 7 << 20},
			Columns: []string{"path", "eventdate"}, Rows: want}
	})
	fake.PageSize = 400
	r := runner(fake)
	var states []types.QueryExecutionState
	r.Progress = func(s Status) { states = append(states, s.State) }
	var got []string
	st, err := r.Run(context.Background(), "SELECT 1", func(row []*string) error {
		if len(row) != 2 || row[1] != nil {
			return fmt.Errorf("row %v: want a path and a NULL", row)
		}
		got = append(got, *row[0])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d rows, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != *want[i][0] {
			t.Fatalf("row %d is %q, want %q", i, got[i], *want[i][0])
		}
	}
	if n := fake.Calls("GetQueryResults"); n != 6 { // 2,346 rows with the header, 400 a page
		t.Errorf("%d GetQueryResults calls, want 6", n)
	}
	if !slices.Equal(states, []types.QueryExecutionState{"QUEUED", "RUNNING", "RUNNING", "SUCCEEDED"}) {
		t.Errorf("progress saw %v", states)
	}
	if st.Scanned != 7<<20 || st.State != types.QueryExecutionStateSucceeded {
		t.Errorf("status %+v", st)
	}
	if s := fake.Started(); len(s) != 1 || s[0].SQL != "SELECT 1" || s[0].Workgroup != "wg" || s[0].Database != "db" {
		t.Errorf("started %+v", s)
	}
	if len(fake.Stopped()) != 0 {
		t.Errorf("a finished query was stopped: %v", fake.Stopped())
	}
}

func TestFailedAndCancelledQueries(t *testing.T) {
	for _, state := range []string{"FAILED", "CANCELLED"} {
		fake := fakeathena.New(t, func(string) fakeathena.Execution {
			return fakeathena.Execution{States: []string{"RUNNING", state}, Reason: "SYNTAX_ERROR: line 1:8: Column 'x' cannot be resolved"}
		})
		rows := 0
		_, err := runner(fake).Run(context.Background(), "SELECT x", func([]*string) error { rows++; return nil })
		var qe *QueryError
		if !errors.As(err, &qe) || string(qe.Status.State) != state || qe.Status.Reason == "" {
			t.Fatalf("%s: err = %v", state, err)
		}
		if rows != 0 || fake.Calls("GetQueryResults") != 0 {
			t.Errorf("%s: results were read", state)
		}
		t.Logf("%s: %v", state, err)
	}
}

// Throttled calls are retried by the SDK; the query still completes once.
func TestThrottlingIsRetried(t *testing.T) {
	fake := fakeathena.New(t, func(string) fakeathena.Execution {
		return fakeathena.Execution{States: []string{"RUNNING", "SUCCEEDED"}, Columns: []string{"path"}, Rows: [][]*string{{aws.String("s3://b/k")}}}
	})
	fake.Throttle("StartQueryExecution", 1)
	fake.Throttle("GetQueryExecution", 2)
	fake.Throttle("GetQueryResults", 1)
	rows := 0
	if _, err := runner(fake).Run(context.Background(), "SELECT 1", func([]*string) error { rows++; return nil }); err != nil {
		t.Fatal(err)
	}
	if rows != 1 || len(fake.Started()) != 1 {
		t.Fatalf("%d rows, %d queries started", rows, len(fake.Started()))
	}
}

// An interrupt while the query runs stops it (on a context of its own).
func TestInterruptStopsTheQuery(t *testing.T) {
	fake := fakeathena.New(t, func(string) fakeathena.Execution { return fakeathena.Execution{States: []string{"RUNNING"}} })
	ctx, cancel := context.WithCancel(context.Background())
	r := runner(fake)
	r.Progress = func(s Status) {
		if s.State == types.QueryExecutionStateRunning {
			cancel()
		}
	}
	_, err := r.Run(ctx, "SELECT 1", func([]*string) error { return nil })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	if s := fake.Stopped(); len(s) != 1 || s[0] != fake.Started()[0].ID {
		t.Fatalf("stopped %v, want the query started", s)
	}
}

// A scan past MaxScanBytes stops the query; one under it runs to its end.
func TestScanGuard(t *testing.T) {
	plan := func(string) fakeathena.Execution {
		return fakeathena.Execution{States: []string{"RUNNING", "RUNNING", "RUNNING", "SUCCEEDED"}, Scanned: []int64{1e6, 2e9, 3e9, 4e9}, Columns: []string{"path"}}
	}
	fake := fakeathena.New(t, plan)
	r := runner(fake)
	r.MaxScanBytes = 1e9
	st, err := r.Run(context.Background(), "SELECT 1", func([]*string) error { return nil })
	if !errors.Is(err, ErrScanLimit) || st.Scanned != 2e9 {
		t.Fatalf("err = %v, status %+v", err, st)
	}
	if len(fake.Stopped()) != 1 {
		t.Fatalf("the query was not stopped: %v", fake.Stopped())
	}
	r.MaxScanBytes = 5e9
	if _, err := r.Run(context.Background(), "SELECT 1", func([]*string) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if len(fake.Stopped()) != 1 {
		t.Fatalf("a query under the limit was stopped")
	}
}

// A poll that keeps failing stops the query rather than leave it running.
func TestPollErrorStopsTheQuery(t *testing.T) {
	fake := fakeathena.New(t, func(string) fakeathena.Execution { return fakeathena.Execution{States: []string{"RUNNING"}} })
	fake.Throttle("GetQueryExecution", 100) // more than the SDK retries
	_, err := runner(fake).Run(context.Background(), "SELECT 1", func([]*string) error { return nil })
	if err == nil || len(fake.Stopped()) != 1 {
		t.Fatalf("err = %v, stopped %v", err, fake.Stopped())
	}
}

func TestCost(t *testing.T) {
	if c := (Status{Scanned: 1e12}).Cost(); c != 5 {
		t.Errorf("1 TB costs %v, want 5", c)
	}
	if c := (Status{Scanned: 1}).Cost(); c != 5e-5 {
		t.Errorf("a tiny scan costs %v, want the 10 MB minimum 5e-5", c)
	}
}
