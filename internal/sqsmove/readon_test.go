package sqsmove_test

import (
	"context"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/sqsmove"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// A replay that reads on (pushdlq replay --ineligible park past SQS's
// in-flight limit): the messages received after a scan stopped (Extra)
// are readmitted, not released, and a second Run of the same Replayer
// replays only what was received since, in the same journal run (one run
// event), with counts that go on adding up. Each message ends where it was
// routed, once.
func TestReplayerRunsAgainOnWhatWasReceivedSince(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, 30, false)
	hold := f.newHold(f.api, 60*time.Second)
	j, err := sqsmove.OpenJournal(f.journal)
	if err != nil {
		t.Fatal(err)
	}
	r := &sqsmove.Replayer{API: f.api, Hold: hold, Source: f.dlq, Journal: j, Concurrency: 4, Route: f.route}
	seen := map[string]int{}
	see := func(_ int, m *sqsmove.Message) bool { seen[m.MessageID]++; return false }
	if err := hold.Receive(ctx, sqsmove.ReceiveOptions{Wait: time.Second, Max: 12, Receivers: 1}, see); err != nil {
		t.Fatal(err)
	}
	extra := hold.InState(sqsmove.Extra)
	first, err := r.Run(ctx)
	if err != nil || len(seen) != 12 || extra == 0 {
		t.Fatalf("first part: %d seen, %d extra, err %v", len(seen), extra, err)
	}
	if err := hold.Readmit(see); err != nil || hold.InState(sqsmove.Extra) != 0 || len(seen) != 12+extra {
		t.Fatalf("readmit: %d seen, %d still extra, err %v", len(seen), hold.InState(sqsmove.Extra), err)
	}
	if err := hold.Receive(ctx, sqsmove.ReceiveOptions{Wait: time.Second}, see); err != nil {
		t.Fatal(err)
	}
	second, err := r.Run(ctx)
	if cerr := j.Close(); err != nil || cerr != nil {
		t.Fatal(err, cerr)
	}
	f.release(hold)
	if len(seen) != 30 || first.Sent == 0 || second.Sent != 20 || second.Sent+second.Failed+second.Uncertain != 20 {
		t.Errorf("%d seen; counts %+v then %+v, want 20 sent in all", len(seen), first, second)
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("%s seen %d times", id, n)
		}
	}
	runs := 0
	for _, l := range testsupport.ReadLines(t, f.journal) {
		if gjson.Get(l, "event").Str == sqsmove.EvRun {
			runs++
		}
	}
	if runs != 1 {
		t.Errorf("%d run events in the journal, want 1", runs)
	}
	f.wantEachOnce(nil)
}
