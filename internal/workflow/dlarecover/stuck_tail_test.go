package dlarecover

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/dla/gen"
	"github.com/deadletter/deadletter/internal/recovery"
	"github.com/deadletter/deadletter/internal/selection"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// stuckMoves is a store whose first copy into failed-sqs/ hangs until
// released (an S3 request that gets no answer: the SDK waits without
// limit).
type stuckMoves struct {
	archive.Store
	once    sync.Once
	stuck   chan struct{} // closed when the copy hangs
	release chan struct{}
}

func (s *stuckMoves) PutNew(ctx context.Context, key string, body []byte, origin string) error {
	if strings.Contains(key, "/failed-sqs/") {
		first := false
		s.once.Do(func() { first = true })
		if first {
			close(s.stuck)
			<-s.release
		}
	}
	return s.Store.PutNew(ctx, key, body, origin)
}

// TestStuckTailHoldsTheRunBack: the first object of the selection is
// unreadable, and its move to failed-sqs/ hangs. The break: the tails of
// the objects after it ended and gave back their places, so the run went
// on through the whole selection, writing, announcing and deleting every
// object while not one line (nor the progress) went past the stuck one:
// results piled up in memory waiting for its turn, and an operator who
// then killed the hung run had no line for any of what it had done. What
// must hold: while that tail hangs, no more objects are started than the
// run holds in flight; once it ends, the run goes to the end, every line
// in the selection's order, and the counts add up.
func TestStuckTailHoldsTheRunBack(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	for _, conc := range []int{1, 8} {
		fx := newRunFixture(t)
		first := (dla.Layout{Stack: "s"}).DatePrefix(dla.AreaSQS, "2024-03-01") + "000-unreadable"
		fx.put(t, first, []byte("not a message"))
		fx.generate(t, gen.Options{Stack: "s", Count: 150, Seed: 9, Days: 2, MinGranules: 1, MaxGranules: 2, Malformed: -1})
		store := &stuckMoves{Store: fx.store, stuck: make(chan struct{}), release: make(chan struct{})}
		n := &announcing{execs: map[string]bool{}}
		r := &recoverRun{Store: store, Layout: dla.Layout{Stack: "s"}, DB: testsupport.CumulusDB(t, fx.pool), Pool: fx.pool,
			Writer: &recovery.Writer{Now: func() time.Time { return now }, Notifier: n}, Concurrency: conc,
			Now: func() time.Time { return now }, Sum: &Summary{Selected: fx.spool.Len()}, Objects: fx.spool}
		more := resultsAhead(conc)
		whileStuck := make(chan int, 1)
		go func() {
			<-store.stuck
			before, over := n.watch(more)
			select {
			case <-over:
			case <-time.After(time.Second):
			}
			whileStuck <- n.announced() - before
			close(store.release)
		}()
		var keys []string
		err := r.runScope(context.Background(), selection.Scope{Layout: dla.Layout{Stack: "s"}}, func(o Object) error {
			keys = append(keys, o.Key)
			return nil
		})
		if err != nil {
			t.Fatalf("concurrency %d: %v", conc, err)
		}
		if got := <-whileStuck; got > more {
			t.Errorf("concurrency %d: %d objects written and announced while the first one's move hung, want at most %d", conc, got, more)
		}
		s := r.Sum
		if len(keys) != s.Selected || keys[0] != first || s.Processed != s.Selected || s.Moved != 1 || s.NotProcessed != 0 {
			t.Errorf("concurrency %d: %d lines (the first %q), summary %+v", conc, len(keys), keys[0], s)
		}
	}
}
