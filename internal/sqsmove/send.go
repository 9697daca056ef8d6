package sqsmove

import (
	"context"
	"fmt"
	"sync"
)

// batcher groups entries per target queue into batches of at most
// maxEntries messages and maxBytes bytes (a larger message goes alone).
type batcher struct {
	maxEntries, maxBytes int
	pending              map[string]*batch
	order                []string // targets in the order they first appeared
}

// add puts e in its target's batch. When that batch cannot take e, it is
// returned (full, to be sent) and e starts the next one.
func (bt *batcher) add(target string, e entry) (full *batch) {
	if bt.pending == nil {
		bt.pending = map[string]*batch{}
	}
	b := bt.pending[target]
	if b == nil {
		b = &batch{target: target, park: e.route.Park}
		bt.pending[target] = b
		bt.order = append(bt.order, target)
	}
	size := e.Msg.size()
	if len(b.entries) == bt.maxEntries || (len(b.entries) > 0 && b.bytes+size > bt.maxBytes) {
		full = b
		b = &batch{target: target, park: e.route.Park}
		bt.pending[target] = b
	}
	b.entries = append(b.entries, e)
	b.bytes += size
	return full
}

// rest returns the batches not yet returned by add.
func (bt *batcher) rest() []*batch {
	var out []*batch
	for _, t := range bt.order {
		if b := bt.pending[t]; len(b.entries) > 0 {
			out = append(out, b)
		}
	}
	return out
}

// take returns the batches not yet returned by add, and forgets them: the
// next entry for a target starts a new batch.
func (bt *batcher) take() []*batch {
	out := bt.rest()
	bt.pending, bt.order = nil, nil
	return out
}

// Item is one message for Send: it goes to Queue; when Route.Park is set it
// is parked there with Route.Delay seconds of delay.
type Item struct {
	Msg   *Message
	Queue string
	Route Route
}

// Sent is what became of one Item.
type Sent struct {
	// Outcome is OutcomeSent or OutcomeParked (the queue accepted it),
	// OutcomeFailed (it refused it: the message is not there) or
	// OutcomeUncertain (no reply: it may be there).
	Outcome Outcome
	NewID   string // the id the queue gave it
	Err     error  // why it failed or is uncertain
}

// Send sends items to their queues, batched per queue by count (10) and
// bytes (DefaultMaxBatchBytes), over at most concurrency calls at a time,
// with the Replayer's rules: message attributes kept, FIFO group and
// deduplication ids, results read entry by entry, entries the server failed
// through no fault of the sender retried, a lost reply never retried and
// reported as uncertain. It neither holds nor deletes anything: it is for a
// caller whose source deletes what the caller reports done (a Lambda
// function under an SQS event source mapping). The results are in the order
// of items.
func Send(ctx context.Context, api API, items []Item, concurrency int) []Sent {
	out := make([]Sent, len(items))
	bt := &batcher{maxEntries: 10, maxBytes: DefaultMaxBatchBytes}
	var batches []*batch
	for i := range items {
		it := &items[i]
		if full := bt.add(it.Queue, entry{Ref{i, it.Msg}, it.Route}); full != nil {
			batches = append(batches, full)
		}
	}
	batches = append(batches, bt.rest()...)
	work := make(chan *batch)
	var wg sync.WaitGroup
	for range max(1, min(concurrency, len(batches))) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range work {
				res := sendEntries(ctx, api, b)
				for _, e := range b.entries {
					s := &out[e.Ord]
					if id, ok := res.accepted[e.Ord]; ok {
						s.Outcome, s.NewID = OutcomeSent, id
						if e.route.Park {
							s.Outcome = OutcomeParked
						}
					} else if err, ok := res.uncertain[e.Ord]; ok {
						s.Outcome, s.Err = OutcomeUncertain, err
					} else {
						s.Outcome, s.Err = OutcomeFailed, res.failed[e.Ord]
						if s.Err == nil {
							s.Err = fmt.Errorf("send to %s: not accepted", b.target)
						}
					}
				}
			}
		}()
	}
	for _, b := range batches {
		work <- b
	}
	close(work)
	wg.Wait()
	return out
}
