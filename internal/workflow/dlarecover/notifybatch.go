package dlarecover

import (
	"context"
	"time"

	"github.com/deadletter/deadletter/internal/recovery"
)

// notifyBatcher publishes the notifications the objects' tails hold, per
// topic, in batches (SNS PublishBatch: up to 10 a call) gathered across
// objects: a batch goes when a topic has batchEntries waiting, or linger
// after the first of them arrived. Each topic's notifications go in the
// order the tails handed them over. A tail waits for its own to be
// published before its object is deleted or moved.
type notifyBatcher struct {
	n      recovery.BatchNotifier
	ctx    context.Context
	in     chan *heldNotes
	linger time.Duration
	done   chan struct{}
}

// heldNotes are one object's notifications, handed to the batcher.
type heldNotes struct {
	all  []recovery.Notification
	errs []error // one per notification, set as they are published
	left int
	done chan struct{} // closed when every one was tried
}

// noteRef is one notification waiting in a topic's batch.
type noteRef struct {
	h *heldNotes
	i int
}

// batchEntries is how many notifications of one topic make a batch (SNS's
// limit for PublishBatch).
const batchEntries = 10

// batchLinger is how long the first notification of a batch waits for
// more.
const batchLinger = 5 * time.Millisecond

func newNotifyBatcher(ctx context.Context, n recovery.BatchNotifier) *notifyBatcher {
	b := &notifyBatcher{n: n, ctx: ctx, in: make(chan *heldNotes), linger: batchLinger, done: make(chan struct{})}
	go b.loop()
	return b
}

// publish hands an object's notifications over and waits until each was
// tried: the counts of those published, and the error of the first that
// failed, as the Writer returns a failed publish.
func (b *notifyBatcher) publish(all []recovery.Notification) (recovery.PublishCounts, error) {
	h := &heldNotes{all: all, errs: make([]error, len(all)), left: len(all), done: make(chan struct{})}
	b.in <- h
	<-h.done
	var c recovery.PublishCounts
	var first error
	for i, err := range h.errs {
		if err == nil {
			c.Add(all[i].Topic)
		} else if first == nil {
			first = recovery.PublishErrorOf(all[i].Topic, err)
		}
	}
	return c, first
}

// close publishes what is waiting and stops the batcher; no publish may
// be in progress or follow.
func (b *notifyBatcher) close() {
	close(b.in)
	<-b.done
}

func (b *notifyBatcher) loop() {
	defer close(b.done)
	waiting := map[recovery.Topic][]noteRef{}
	var timer <-chan time.Time
	flush := func(topic recovery.Topic) {
		refs := waiting[topic]
		delete(waiting, topic)
		if len(refs) == 0 {
			return
		}
		msgs := make([][]byte, len(refs))
		for i, r := range refs {
			msgs[i] = r.h.all[r.i].Message
		}
		errs := b.n.PublishBatch(b.ctx, topic, msgs)
		for i, r := range refs {
			r.h.errs[r.i] = errs[i]
			if r.h.left--; r.h.left == 0 {
				close(r.h.done)
			}
		}
	}
	flushAll := func() {
		for topic := range waiting {
			flush(topic)
		}
		timer = nil
	}
	for {
		select {
		case h, ok := <-b.in:
			if !ok {
				flushAll()
				return
			}
			if len(h.all) == 0 {
				close(h.done)
				continue
			}
			if len(waiting) == 0 {
				timer = time.After(b.linger)
			}
			for i, x := range h.all {
				waiting[x.Topic] = append(waiting[x.Topic], noteRef{h: h, i: i})
				if len(waiting[x.Topic]) == batchEntries {
					flush(x.Topic)
				}
			}
			if len(waiting) == 0 {
				timer = nil
			}
		case <-timer:
			flushAll()
		}
	}
}
