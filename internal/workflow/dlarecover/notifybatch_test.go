package dlarecover

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/deadletter/deadletter/internal/recovery"
)

// recordingNotifier records each PublishBatch call and fails the messages
// fail names.
type recordingNotifier struct {
	mu    sync.Mutex
	calls [][]string
	fail  map[string]bool
}

func (n *recordingNotifier) Publish(context.Context, recovery.Topic, []byte) error {
	return errors.New("Publish called: the batcher publishes in batches")
}

func (n *recordingNotifier) PublishBatch(_ context.Context, _ recovery.Topic, msgs [][]byte) []error {
	n.mu.Lock()
	defer n.mu.Unlock()
	var call []string
	errs := make([]error, len(msgs))
	for i, m := range msgs {
		call = append(call, string(m))
		if n.fail[string(m)] {
			errs[i] = errors.New("refused")
		}
	}
	n.calls = append(n.calls, call)
	return errs
}

// The notifications of objects handed over at once go in shared batches
// of at most 10 per topic, each object learns the fate of its own, and the
// first failure of an object is its error, as the Writer returns it.
func TestNotifyBatcherSharesBatchesAcrossObjects(t *testing.T) {
	n := &recordingNotifier{fail: map[string]bool{"o3-g1": true}}
	b := newNotifyBatcher(context.Background(), n)
	type res struct {
		counts recovery.PublishCounts
		err    error
	}
	results := make([]res, 8)
	var wg sync.WaitGroup
	for o := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			all := []recovery.Notification{{Topic: recovery.TopicExecution, Message: []byte(fmt.Sprintf("o%d-e", o))}}
			for g := range 3 {
				all = append(all, recovery.Notification{Topic: recovery.TopicGranule, Message: []byte(fmt.Sprintf("o%d-g%d", o, g))})
			}
			c, err := b.publish(all)
			results[o] = res{c, err}
		}()
	}
	wg.Wait()
	b.close()
	sent := 0
	for _, c := range n.calls {
		if len(c) > batchEntries {
			t.Errorf("a call of %d", len(c))
		}
		sent += len(c)
	}
	if sent != 32 || len(n.calls) >= 16 {
		t.Errorf("%d notifications in %d calls: want 32 in fewer than 16", sent, len(n.calls))
	}
	for o, r := range results {
		switch {
		case o == 3:
			var pe *recovery.PublishError
			if !errors.As(r.err, &pe) || pe.Topic != recovery.TopicGranule || !recovery.IsTransient(r.err) || r.counts != (recovery.PublishCounts{Execution: 1, Granule: 2}) {
				t.Errorf("object 3: %+v, %v; want its failed granule notification as a transient PublishError", r.counts, r.err)
			}
		case r.err != nil || r.counts != (recovery.PublishCounts{Execution: 1, Granule: 3}):
			t.Errorf("object %d: %+v, %v", o, r.counts, r.err)
		}
	}
}
