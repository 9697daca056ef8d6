package dlarecover

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

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

// gatedNotifier blocks each PublishBatch call holding a message of gated
// until release is closed, and records the messages of each call as it
// returns.
type gatedNotifier struct {
	recordingNotifier
	gated   string
	started chan struct{} // closed when the gated call began
	release chan struct{}
}

func (n *gatedNotifier) PublishBatch(ctx context.Context, topic recovery.Topic, msgs [][]byte) []error {
	for _, m := range msgs {
		if string(m) == n.gated {
			close(n.started)
			<-n.release
		}
	}
	return n.recordingNotifier.PublishBatch(ctx, topic, msgs)
}

// Batches go out side by side, but a record's notification waits for the
// call holding its earlier one: while the call with granule G1's first
// notification hangs, G2's is published, and G1's second is held back
// until the first returned, so that G1's last notification is the one of
// its last write.
func TestNotifyBatcherKeepsARecordsNotificationsInOrderWhileCallsOverlap(t *testing.T) {
	g1a, g1b, g2 := `{"record":{"granuleId":"G1"},"n":1}`, `{"record":{"granuleId":"G1"},"n":2}`, `{"record":{"granuleId":"G2"}}`
	n := &gatedNotifier{gated: g1a, started: make(chan struct{}), release: make(chan struct{})}
	b := newNotifyBatcher(context.Background(), n)
	note := func(m string) []recovery.Notification {
		return []recovery.Notification{{Topic: recovery.TopicGranule, Message: []byte(m)}}
	}
	first := make(chan error, 1)
	go func() { _, err := b.publish(note(g1a)); first <- err }()
	<-n.started
	if _, err := b.publish(note(g2)); err != nil {
		t.Fatalf("G2 beside the hung call: %v", err)
	}
	second := make(chan error, 1)
	go func() { _, err := b.publish(note(g1b)); second <- err }()
	select {
	case err := <-second:
		t.Fatalf("G1's second notification was published (%v) while the call with its first hung", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(n.release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := <-second; err != nil {
		t.Fatal(err)
	}
	b.close()
	var order []string
	for _, c := range n.calls {
		order = append(order, c...)
	}
	want := []string{g2, g1a, g1b}
	if !slices.Equal(order, want) {
		t.Errorf("published in the order %q, want %q", order, want)
	}
}

// The record a notification is of is found in the messages the Writer
// publishes on each topic (an execution's and a PDR's are the record
// itself, a granule's holds it under "record"), providers first or not.
func TestRecordOfNamesTheRecordOfEachTopicsMessages(t *testing.T) {
	arn := "arn:aws:states:us-east-1:000000000000:execution:wf:e1"
	pv := &recovery.Providers{CMR: "cmr", Metrics: "m"}
	for _, c := range []struct {
		topic recovery.Topic
		msg   []byte
		want  string
	}{
		{recovery.TopicExecution, recovery.ExecutionRecord(&recovery.StoredExecution{Arn: arn, Status: "completed"}), arn},
		{recovery.TopicExecution, pv.Prefix(recovery.ExecutionRecord(&recovery.StoredExecution{Arn: arn, Status: "completed"})), arn},
		{recovery.TopicPdr, recovery.PdrRecord(&recovery.StoredPdr{Name: "P1.PDR", Status: "running"}, "us-east-1"), "P1.PDR"},
		{recovery.TopicGranule, recovery.GranuleMessage(&recovery.StoredGranule{GranuleID: "G1", Status: "completed"}, pv), "G1"},
	} {
		if got := recordOf(c.topic, c.msg); got != c.want {
			t.Errorf("%s message %s: record %q, want %q", c.topic, c.msg, got, c.want)
		}
	}
}

// countingNotifier holds every PublishBatch call until release is closed,
// counting the calls in progress and the most there were at once.
type countingNotifier struct {
	recordingNotifier
	mu      sync.Mutex
	now     int
	most    int
	release chan struct{}
}

func (n *countingNotifier) PublishBatch(ctx context.Context, topic recovery.Topic, msgs [][]byte) []error {
	n.mu.Lock()
	n.now++
	n.most = max(n.most, n.now)
	n.mu.Unlock()
	<-n.release
	n.mu.Lock()
	n.now--
	n.mu.Unlock()
	return n.recordingNotifier.PublishBatch(ctx, topic, msgs)
}

func (n *countingNotifier) inProgress() (now, most int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.now, n.most
}

// Calls go side by side, at most callsInFlight at once: twelve batches of
// twelve records while SNS holds every call make eight calls at a time;
// the other four follow as those return, and every notification is
// published.
func TestNotifyBatcherMakesAtMostCallsInFlightAtOnce(t *testing.T) {
	n := &countingNotifier{release: make(chan struct{})}
	b := newNotifyBatcher(context.Background(), n)
	const objects = callsInFlight + 4
	var wg sync.WaitGroup
	for o := range objects {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := b.publish([]recovery.Notification{{Topic: recovery.TopicGranule,
				Message: []byte(fmt.Sprintf(`{"record":{"granuleId":"G%d"}}`, o))}}); err != nil {
				t.Errorf("object %d: %v", o, err)
			}
		}()
		time.Sleep(4 * batchLinger) // its own batch
	}
	deadline := time.Now().Add(5 * time.Second)
	for now, _ := n.inProgress(); now < callsInFlight && time.Now().Before(deadline); now, _ = n.inProgress() {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // room for a call past the bound
	if _, most := n.inProgress(); most != callsInFlight {
		t.Errorf("%d calls at once while SNS held them, want %d", most, callsInFlight)
	}
	close(n.release)
	wg.Wait()
	b.close()
	sent := 0
	for _, c := range n.calls {
		sent += len(c)
	}
	if sent != objects {
		t.Errorf("%d notifications published, want %d", sent, objects)
	}
}
