package cumulusdb_test

import (
	"context"
	"testing"

	"github.com/deadletter/deadletter/internal/recovery"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// cancelAfterGranule publishes through a RecordingNotifier and cancels the
// write's context once the first granule notification is out: the caller
// gave up (a Lambda's deadline, an interrupt) between two granules.
type cancelAfterGranule struct {
	testsupport.RecordingNotifier
	cancel context.CancelFunc
}

func (c *cancelAfterGranule) Publish(ctx context.Context, topic recovery.Topic, message []byte) error {
	err := c.RecordingNotifier.Publish(ctx, topic, message)
	if topic == recovery.TopicGranule {
		c.cancel()
	}
	return err
}

// The context ends between two granules of a message, right after one was
// written and published. The break: the granule loop stopped without an
// error, so Write reported the message written although its other
// granules were never written nor published; the db-writer processor
// (whose context is the invocation's) then deleted the SQS record. What
// must hold: Write fails, transiently (nothing is wrong with the message),
// so the message is retried or kept.
func TestContextEndingBetweenGranulesFailsTheWrite(t *testing.T) {
	_, w := newDB(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n := &cancelAfterGranule{cancel: cancel}
	w.Notifier = n
	res, err := w.Write(ctx, message("cancel1", "completed", 1000, "",
		granule("CG1", file("b", "cg1", 1)), granule("CG2", file("b", "cg2", 1)), granule("CG3", file("b", "cg3", 1))))
	written := 0
	for _, g := range res.Granules {
		if g.Outcome == recovery.Written {
			written++
		}
	}
	if written != 1 || len(n.Keys(recovery.TopicGranule)) != 1 {
		t.Fatalf("%d granules written, %d published: the context did not end after the first", written, len(n.Keys(recovery.TopicGranule)))
	}
	if err == nil || !recovery.IsTransient(err) {
		t.Fatalf("Write returned %v with %d of 3 granules written (%d granule notifications): the message would be taken as done",
			err, written, len(n.Keys(recovery.TopicGranule)))
	}
}

// The same, when the granules' files fail (v21: a file without a key):
// each such granule publishes two notifications, its failed row and then
// its row read again. The context ends after the first one: nothing more
// is published (the second is not sent once the caller gave up, as one
// by one, whose read of the row then failed, did not send it), and the
// write fails transiently.
func TestContextEndingWhileGranulesWhoseFilesFailArePublishedPublishesNoMore(t *testing.T) {
	if testsupport.Generation(t).Partitioned() {
		t.Skip("v22 writes no file of a granule whose files fail: the same path as TestContextEndingBetweenGranulesFailsTheWrite")
	}
	_, w := newDB(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n := &cancelAfterGranule{cancel: cancel}
	w.Notifier = n
	noKey := `{"bucket":"b","fileName":"nokey","size":1},`
	_, err := w.Write(ctx, message("cancel2", "completed", 1000, "",
		granule("CF1", noKey+file("b", "cf1", 1)), granule("CF2", noKey+file("b", "cf2", 1)), granule("CF3", noKey+file("b", "cf3", 1))))
	if got := n.Keys(recovery.TopicGranule); len(got) != 1 {
		t.Errorf("granule notifications %q: want only the first one, sent before the context ended", got)
	}
	if err == nil || !recovery.IsTransient(err) {
		t.Fatalf("Write returned %v: the message would be taken as done", err)
	}
}
