package dlarecover

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/dla/gen"
	"github.com/deadletter/deadletter/internal/recovery"
	"github.com/deadletter/deadletter/internal/selection"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// announcing is a BatchNotifier that publishes everything and counts the
// executions announced; the channel watch returns is closed once more
// than its limit were.
type announcing struct {
	mu    sync.Mutex
	execs map[string]bool
	limit int
	over  chan struct{}
}

func (n *announcing) Publish(context.Context, recovery.Topic, []byte) error {
	return errors.New("Publish called: the batcher publishes in batches")
}

func (n *announcing) PublishBatch(_ context.Context, topic recovery.Topic, msgs [][]byte) []error {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, m := range msgs {
		if topic == recovery.TopicExecution {
			n.execs[gjson.GetBytes(m, "arn").String()] = true
		}
	}
	n.check()
	return make([]error, len(msgs))
}

func (n *announcing) check() {
	if n.over != nil && len(n.execs) > n.limit {
		close(n.over)
		n.over = nil
	}
}

// watch returns how many were announced, and a channel closed once more
// than that plus more are.
func (n *announcing) watch(more int) (int, <-chan struct{}) {
	n.mu.Lock()
	defer n.mu.Unlock()
	over := make(chan struct{})
	n.limit, n.over = len(n.execs)+more, over
	n.check()
	return len(n.execs), over
}

func (n *announcing) announced() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.execs)
}

// TestBlockedStdoutHoldsTheRunBack: stdout that stops taking lines (a
// pager left open, a consumer that stalls) after the first object, then
// is closed. The break: a tail gave back its place among the tails in
// flight before handing its result over, so with the results no longer
// taken, every object's tail still ended and the workers went on: the
// whole selection was written, announced and queued for deletion while
// its lines piled up in memory (one goroutine and one result each), and
// closing stdout then stopped nothing. What must hold: while the first
// line is held, no more objects are written and announced than the
// results and tails in flight can hold; once stdout fails, the rest is
// not processed, and the counts add up.
func TestBlockedStdoutHoldsTheRunBack(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	for _, conc := range []int{1, 8} {
		fx := newRunFixture(t)
		fx.generate(t, gen.Options{Stack: "s", Count: 150, Seed: 9, Days: 2, MinGranules: 1, MaxGranules: 2, Malformed: -1})
		n := &announcing{execs: map[string]bool{}}
		r := &recoverRun{Store: fx.store, Layout: dla.Layout{Stack: "s"}, DB: testsupport.CumulusDB(t, fx.pool), Pool: fx.pool,
			Writer: &recovery.Writer{Now: func() time.Time { return now }, Notifier: n}, Concurrency: conc,
			Now: func() time.Time { return now }, Sum: &Summary{Selected: fx.spool.Len()}, Objects: fx.spool}
		// While the first line is held, the results waiting to be taken
		// and the tails in flight may still be announced; the workers
		// then hold one each, written but not announced.
		more := conc + tailsInFlight(conc)
		lines, before, whileHeld := 0, 0, 0
		closed := errors.New("write |1: broken pipe")
		err := r.runScope(context.Background(), selection.Scope{Layout: dla.Layout{Stack: "s"}}, func(Object) error {
			if lines++; lines == 1 {
				var over <-chan struct{}
				before, over = n.watch(more)
				select {
				case <-over:
				case <-time.After(time.Second):
				}
				whileHeld = n.announced() - before
				return closed
			}
			return nil
		})
		if !errors.Is(err, closed) {
			t.Fatalf("concurrency %d: Run returned %v, want stdout's error", conc, err)
		}
		s := r.Sum
		if whileHeld > more {
			t.Errorf("concurrency %d: %d more objects written and announced while stdout held the first line, want at most %d; %d of %d in all",
				conc, whileHeld, more, n.announced(), s.Selected)
		}
		if s.Processed+s.Left+s.NotProcessed != s.Selected || s.NotProcessed == 0 {
			t.Errorf("concurrency %d: closing stdout stopped nothing, or the counts do not add up: %+v", conc, s)
		}
		t.Logf("concurrency %d: %d announced before the first line, %d while it was held, %d in all, %d not processed", conc, before, whileHeld, n.announced(), s.NotProcessed)
		if s.Written+s.Dropped < n.announced() {
			t.Errorf("concurrency %d: %d announced, %d counted written", conc, n.announced(), s.Written+s.Dropped)
		}
	}
}
