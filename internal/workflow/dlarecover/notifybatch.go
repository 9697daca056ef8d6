package dlarecover

import (
	"context"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/recovery"
)

// notifyBatcher publishes the notifications the objects' tails hold, per
// topic, in batches (SNS PublishBatch: up to 10 a call) gathered across
// objects: a batch goes when a topic has batchEntries waiting, or linger
// after the first of them arrived. A tail waits for its own to be
// published before its object is deleted or moved.
//
// Up to callsInFlight calls are made at once, so that a service a round
// trip away does not make them a line: one call at a time held a
// 1,800-object recovery at 20 ms from SNS to about 100 objects a second.
// What two calls in flight could reorder is kept in order: a record's
// notification (a granule's, an execution's, a PDR's) is not sent while a
// call holding an earlier one of the same record is in flight. It waits,
// with any others of that record that come meanwhile, and they go in the
// next batch once that call returned, so the record's last notification
// is still the one of its last write, as when the calls went one at a
// time, and a record notified by many objects costs one call a round
// trip, not one each.
type notifyBatcher struct {
	n        recovery.BatchNotifier
	ctx      context.Context
	in       chan *heldNotes
	returned chan *noteCall // a call's results are set
	linger   time.Duration
	done     chan struct{}
	slots    chan struct{} // callsInFlight
	mu       sync.Mutex    // guards the heldNotes' errs and left, set by the calls
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
	k noteKey
}

// noteKey names the record a notification is of, on its topic.
type noteKey struct {
	topic  recovery.Topic
	record string
}

// noteCall is one PublishBatch call and the records it holds.
type noteCall struct {
	keys []noteKey
}

// batchEntries is how many notifications of one topic make a batch (SNS's
// limit for PublishBatch).
const batchEntries = 10

// batchLinger is how long the first notification of a batch waits for
// more.
const batchLinger = 5 * time.Millisecond

// callsInFlight bounds the PublishBatch calls made at once.
const callsInFlight = 8

// recordOf is the record a notification is of: the field Cumulus's
// records of its topic are known by ("" when the message has none: those
// are kept in order among themselves). An execution's and a PDR's message
// is the record itself; a granule's holds it under "record".
func recordOf(topic recovery.Topic, message []byte) string {
	path := "record.granuleId"
	switch topic {
	case recovery.TopicExecution:
		path = "arn"
	case recovery.TopicPdr:
		path = "pdrName"
	}
	return gjson.GetBytes(message, path).String()
}

func newNotifyBatcher(ctx context.Context, n recovery.BatchNotifier) *notifyBatcher {
	b := &notifyBatcher{n: n, ctx: ctx, in: make(chan *heldNotes), returned: make(chan *noteCall), linger: batchLinger,
		done: make(chan struct{}), slots: make(chan struct{}, callsInFlight)}
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

// close publishes what is waiting and stops the batcher once every call
// returned; no publish may be in progress or follow.
func (b *notifyBatcher) close() {
	close(b.in)
	<-b.done
}

func (b *notifyBatcher) loop() {
	defer close(b.done)
	var (
		waiting  = map[recovery.Topic][]noteRef{} // to send
		blocked  = map[noteKey][]noteRef{}        // a call holding the record is in flight
		inFlight = map[noteKey]bool{}             // the records of the calls in flight
		calls    int                              // in flight
		in       = b.in
		timer    <-chan time.Time
	)
	flush := func(topic recovery.Topic) {
		refs := waiting[topic]
		delete(waiting, topic)
		if len(refs) == 0 {
			return
		}
		call := &noteCall{}
		for _, r := range refs {
			if !inFlight[r.k] {
				inFlight[r.k] = true
				call.keys = append(call.keys, r.k)
			}
		}
		calls++
		go b.send(call, topic, refs)
	}
	flushAll := func() {
		for topic := range waiting {
			flush(topic)
		}
	}
	// add queues a notification: to send, or behind its record's call.
	add := func(r noteRef) {
		k := r.k
		if inFlight[k] || len(blocked[k]) > 0 {
			blocked[k] = append(blocked[k], r)
			return
		}
		waiting[k.topic] = append(waiting[k.topic], r)
		if len(waiting[k.topic]) == batchEntries {
			flush(k.topic)
		}
	}
	for {
		select {
		case h, ok := <-in:
			if !ok {
				in = nil
				break
			}
			if len(h.all) == 0 {
				close(h.done)
				continue
			}
			for i, x := range h.all {
				add(noteRef{h: h, i: i, k: noteKey{x.Topic, recordOf(x.Topic, x.Message)}})
			}
		case call := <-b.returned:
			calls--
			for _, k := range call.keys {
				delete(inFlight, k)
			}
			for _, k := range call.keys {
				refs := blocked[k]
				delete(blocked, k)
				for _, r := range refs {
					add(r)
				}
			}
		case <-timer:
			timer = nil
			flushAll()
		}
		if in == nil {
			// Closed: what is waiting goes now, and the batcher ends
			// when nothing is left to send or to hear from.
			flushAll()
			if calls == 0 && len(blocked) == 0 {
				return
			}
		}
		switch {
		case len(waiting) == 0:
			timer = nil
		case timer == nil:
			timer = time.After(b.linger)
		}
	}
}

// send makes one call for refs (one topic's batch) once a slot is free,
// sets their results and tells the loop it returned.
func (b *notifyBatcher) send(call *noteCall, topic recovery.Topic, refs []noteRef) {
	msgs := make([][]byte, len(refs))
	for i, r := range refs {
		msgs[i] = r.h.all[r.i].Message
	}
	b.slots <- struct{}{}
	errs := b.n.PublishBatch(b.ctx, topic, msgs)
	<-b.slots
	b.mu.Lock()
	for i, r := range refs {
		r.h.errs[r.i] = errs[i]
		if r.h.left--; r.h.left == 0 {
			close(r.h.done)
		}
	}
	b.mu.Unlock()
	b.returned <- call
}
