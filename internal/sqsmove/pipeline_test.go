package sqsmove_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/sqsmove"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// A worker sends a batch's delete together with the next batch's send
// (one fsync for both records). Every delete must still follow the
// confirmed send of its messages and the journal's sent records for them:
// a run killed when a delete reaches SQS leaves a journal that resumes
// with those messages moved (deleted, never sent again), so a kill between
// the send and the delete loses nothing and duplicates nothing. The test
// takes the journal as a kill would leave it at each delete, and checks
// that the pipelined path was taken at all.
func TestPipelinedDeleteFollowsItsSentRecords(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 120, false)
	idOfHandle, idOfBody := map[string]string{}, map[string]string{}
	hold := f.holdAll(f.api, 60*time.Second, func(m *sqsmove.Message) {
		idOfHandle[m.ReceiptHandle], idOfBody[m.Body] = m.MessageID, m.MessageID
	})
	var mu sync.Mutex
	sends := 0
	sentIn := map[string]int{} // message id: the send call that carried it
	var bad []string
	deletes, pipelined := 0, 0
	snap := filepath.Join(t.TempDir(), "at-delete.ndjson")
	f.proxy.SetHook(func(op string, body []byte) ([]byte, *testsupport.Reply) {
		mu.Lock()
		defer mu.Unlock()
		switch op {
		case "SendMessageBatch":
			sends++
			for _, e := range gjson.GetBytes(body, "Entries").Array() {
				sentIn[idOfBody[e.Get("MessageBody").Str]] = sends
			}
		case "DeleteMessageBatch":
			deletes++
			b, err := os.ReadFile(f.journal) // what a kill now leaves on disk
			if err == nil {
				err = os.WriteFile(snap, b, 0o600)
			}
			if err != nil {
				t.Error(err)
				return nil, nil
			}
			res, err := sqsmove.ReadJournal(snap)
			if err != nil {
				t.Error(err)
				return nil, nil
			}
			later := false
			for _, e := range gjson.GetBytes(body, "Entries").Array() {
				id := idOfHandle[e.Get("ReceiptHandle").Str]
				if sentIn[id] == 0 || !res.Moved[id] {
					bad = append(bad, id)
				}
				later = later || sends > sentIn[id]
			}
			if later {
				pipelined++
			}
		}
		return nil, nil
	})
	counts, err := f.replay(context.Background(), hold, func(r *sqsmove.Replayer) { r.Concurrency = 2 })
	if err != nil {
		t.Fatal(err)
	}
	f.release(hold)
	f.proxy.SetHook(nil)
	mu.Lock()
	defer mu.Unlock()
	if len(bad) > 0 {
		t.Errorf("%d messages were deleted before the journal said they were sent (a kill then would resend or lose track of them): %v", len(bad), bad)
	}
	if counts.Sent != 80 || deletes == 0 {
		t.Errorf("sent %d, %d delete calls; want 80 sent", counts.Sent, deletes)
	}
	if pipelined == 0 {
		t.Errorf("no delete went out after the next batch's send: the pipelined path was not taken (%d deletes)", deletes)
	}
	f.wantEachOnce(nil)
}
