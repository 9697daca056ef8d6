package dlarecover

import (
	"context"
	"crypto/md5"
	"encoding/json"
	"errors"
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

// heldDeletes is a store whose deletes of written objects (the conditional
// one and the batch call) wait until released, then fail: a run killed
// while they wait, or a delete S3 refuses.
type heldDeletes struct {
	archive.Store
	once    sync.Once
	called  chan struct{} // closed by the first delete
	release chan struct{}
}

func (h *heldDeletes) hold() {
	h.once.Do(func() { close(h.called) })
	<-h.release
}

func (h *heldDeletes) DeleteFast(ctx context.Context, key string, sum [md5.Size]byte) error {
	h.hold()
	return errors.New("SlowDown: Please reduce your request rate")
}

func (h *heldDeletes) DeleteMany(ctx context.Context, keys []string) (map[string]error, error) {
	h.hold()
	return nil, errors.New("InternalError: We encountered an internal error")
}

// An object's ndjson line said "action":"deleted" as soon as its delete was
// queued for the batch: a run killed before the batch delete printed such
// lines for objects all still in sqs/ (494 of them). A line says "deleted"
// only once the delete of that object returned successfully: while the
// deletes wait, no written object's line is out; once they fail, each
// line says the object was left, with why, and none says "deleted". Both
// the conditional deletes (digest known) and the batch call, through the
// background deleter.
func TestDeletedLineOnlyOnceTheDeleteReturned(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	ctx := context.Background()
	fx := newRunFixture(t)
	n := 0
	if err := gen.Generate(gen.Options{Stack: "s", Count: 24, Seed: 5, Days: 1, MinGranules: 1, MaxGranules: 2, Malformed: -1},
		func(o gen.Object) error {
			if err := fx.store.Put(ctx, o.Key, o.Body); err != nil {
				return err
			}
			d, derr := dla.Decode(o.Body)
			if n++; n%2 == 0 && d != nil {
				d.Digest, d.HasDigest = md5.Sum(o.Body), true // deleted one by one, while unchanged
			}
			return fx.spool.Add(o.Key, d, derr)
		}); err != nil {
		t.Fatal(err)
	}
	store := &heldDeletes{Store: fx.store, called: make(chan struct{}), release: make(chan struct{})}
	r := &recoverRun{Store: store, Layout: dla.Layout{Stack: "s"}, DB: testsupport.CumulusDB(t, fx.pool), Pool: fx.pool,
		Writer: &recovery.Writer{Now: func() time.Time { return now }}, Concurrency: 4,
		Now: func() time.Time { return now }, Sum: &Summary{Selected: fx.spool.Len()}, Objects: fx.spool}
	var mu sync.Mutex
	var lines []Object
	done := make(chan error, 1)
	go func() {
		done <- r.runScope(ctx, selection.Scope{Layout: dla.Layout{Stack: "s"}}, func(o Object) error {
			mu.Lock()
			lines = append(lines, o)
			mu.Unlock()
			return nil
		})
	}()
	select {
	case <-store.called:
	case err := <-done:
		t.Fatalf("the run ended (%v) without deleting anything", err)
	case <-time.After(2 * time.Minute):
		t.Fatalf("no delete within 2 minutes")
	}
	// The process could be killed now: what has been printed must be true.
	time.Sleep(100 * time.Millisecond)
	mu.Lock()
	for _, o := range lines {
		if o.Action == "deleted" {
			t.Errorf("%s is reported deleted while its delete has not returned", o.Key)
		}
	}
	mu.Unlock()
	close(store.release)
	runErr := <-done
	if runErr == nil {
		t.Errorf("every delete failed, yet Run returned nil")
	}
	written := 0
	for _, o := range lines {
		if o.Result != recovery.Written && o.Result != recovery.Dropped {
			continue
		}
		written++
		if _, err := fx.store.Stat(ctx, o.Key); err != nil {
			t.Errorf("%s is gone, though every delete failed: %v", o.Key, err)
		}
		b, _ := json.Marshal(o)
		if o.Action != "left" || !strings.Contains(o.Error, "not deleted") {
			t.Errorf("a written object still in place has the line %s; want action left, saying it was not deleted", b)
		}
	}
	if written == 0 {
		t.Fatalf("nothing was written: the test needs written objects")
	}
	if r.Sum.Deleted != 0 || r.Sum.Processed+r.Sum.Left+r.Sum.NotProcessed != r.Sum.Selected {
		t.Errorf("summary %+v: want 0 deleted and counts that add up", *r.Sum)
	}
}

// neighbourStore is an archive where another run is at work: right after
// this run copies victim to failed-sqs/, the other run deletes victim; and
// reading denied for its move fails with a refusal (no answer about the
// object at all).
type neighbourStore struct {
	archive.Store
	victim, denied string
}

func (n *neighbourStore) PutNew(ctx context.Context, key string, body []byte, origin string) error {
	err := n.Store.PutNew(ctx, key, body, origin)
	if origin == archive.Origin(n.victim) {
		_ = n.Store.Delete(ctx, n.victim)
	}
	return err
}

func (n *neighbourStore) Get(ctx context.Context, key string) ([]byte, error) {
	if key == n.denied {
		return nil, errors.New("AccessDenied: Access Denied")
	}
	return n.Store.Get(ctx, key)
}

// An object whose move copied it to failed-sqs/ and then found the
// original gone (another run moved or deleted it meanwhile) was counted as
// left in place ("copied"), though nothing is left: it is gone elsewhere,
// its line names this run's copy, which stays. An object whose state is
// not known (its read for the move was refused) is never counted gone: it
// stays "left".
func TestMoveThatFindsTheOriginalGoneIsGoneElsewhereAndARefusalIsLeft(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	ctx := context.Background()
	fx := newRunFixture(t)
	victim, denied := "s/dead-letter-archive/sqs/2026-11-20/victim", "s/dead-letter-archive/sqs/2026-11-20/denied"
	fx.put(t, victim, []byte("not json {"))
	fx.put(t, denied, []byte("not json either {"))
	store := &neighbourStore{Store: fx.store, victim: victim, denied: denied}
	r := &recoverRun{Store: store, Layout: dla.Layout{Stack: "s"}, DB: testsupport.CumulusDB(t, fx.pool), Pool: fx.pool,
		Writer: &recovery.Writer{Now: func() time.Time { return now }}, Concurrency: 2,
		Now: func() time.Time { return now }, Sum: &Summary{Selected: fx.spool.Len()}, Objects: fx.spool}
	lines := map[string]Object{}
	if err := r.runScope(ctx, selection.Scope{Layout: dla.Layout{Stack: "s"}}, func(o Object) error {
		lines[o.Key] = o
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	v := lines[victim]
	if v.Action != "gone" || v.MovedTo == "" || !strings.Contains(v.Error, "another run") {
		t.Errorf("the object another run took during its move: action %q, moved_to %q, error %q; want gone, naming this run's copy and the other run", v.Action, v.MovedTo, v.Error)
	}
	if v.MovedTo != "" {
		if b, err := fx.store.Get(ctx, v.MovedTo); err != nil || string(b) != "not json {" {
			t.Errorf("this run's copy at %s: %q, %v; want it kept", v.MovedTo, b, err)
		}
	}
	if d := lines[denied]; d.Action != "left" {
		t.Errorf("the object whose read was refused: action %q, want left (its state is not known)", d.Action)
	}
	var sum map[string]any
	b, _ := json.Marshal(r.Sum)
	_ = json.Unmarshal(b, &sum)
	if sum["gone_elsewhere"] != float64(1) || sum["left"] != float64(1) {
		t.Errorf("summary: gone_elsewhere %v, left %v; want 1 and 1", sum["gone_elsewhere"], sum["left"])
	}
}
