package audit

import (
	"context"
	"testing"

	"github.com/deadletter/deadletter/internal/archive"
)

// A started record whose put stored it but lost its reply: the retry is
// refused (the key is taken), and the record is this run's own, so the run
// goes on; a record of another body at that key still refuses it.
func TestABeginWhoseReplyWasLostGoesOn(t *testing.T) {
	ctx := context.Background()
	s := lostReplyStore{localStore(t)}
	r, err := Begin(ctx, s, "a/", Started{Tool: "dla", Verb: "recover"}, Options{})
	if err != nil {
		t.Fatalf("a begin whose reply was lost refused the run: %v", err)
	}
	_ = r.Finish(ctx, Finished{})
	other := Started{Tool: "dla", Verb: "recover", RunID: r.RunID()}
	other.StartedAt = mustRun(t, s, "a/").StartedAt
	other.Reason = "another body"
	if _, err := Begin(ctx, s.Store, "a/", other, Options{}); err == nil {
		t.Fatal("a record of another body at the same key was taken as this run's")
	}
}

func mustRun(t *testing.T, s archive.Store, base string) Run {
	t.Helper()
	runs, _, err := List(context.Background(), s, base, Filter{})
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs %d, err %v", len(runs), err)
	}
	return runs[0]
}

// lostReplyStore stores a PutNew and then answers as a retry would, that
// the key is taken.
type lostReplyStore struct{ archive.Store }

func (s lostReplyStore) PutNew(ctx context.Context, key string, body []byte, origin string) error {
	if err := s.Store.PutNew(ctx, key, body, origin); err != nil {
		return err
	}
	return archive.ErrExists
}
