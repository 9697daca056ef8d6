package pushdlq_test

import (
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

// The same message twice in one event (SQS delivers at least once; an
// event source mapping with a batching window can put a redelivered
// message in the batch beside its first delivery): it is sent once, and
// parked once. Before, each record was sent, so the processor itself made
// a duplicate in the priority queue and parked a second copy in the DLQ.
// Each record still gets its log line, the repeat marked, and when the
// send fails the id is reported once.
func TestSameMessageTwiceInOneEventIsSentOnce(t *testing.T) {
	f := newFixture(t, "1004", 1)
	ev := f.seed(body(1, inWindow, 1004, "twice"), body(1, before, 1004, "old-twice"), body(1, inWindow+1, 1004, "once"))
	// as delivered: twice, once, old-twice, twice, old-twice
	r := ev.Records
	ev.Records = []events.SQSMessage{r[0], r[2], r[1], r[0], r[1]}
	failures, lines, sum := f.handleRaw(ev)
	if len(failures) != 0 {
		t.Fatalf("batch item failures %v", failures)
	}
	for i, l := range lines {
		want := i >= 3
		if l.DuplicateInEvent != want || l.MessageID != ev.Records[i].MessageId {
			t.Errorf("record %d logged %+v, want duplicate_in_event %v", i, l, want)
		}
	}
	if lines[3].Outcome != "sent" || lines[4].Outcome != "parked" {
		t.Errorf("repeats logged %+v, %+v", lines[3], lines[4])
	}
	if sum.Records != 5 || sum.Sent != 2 || sum.Parked != 1 || sum.DuplicatesInEvent != 2 {
		t.Errorf("summary %+v", sum)
	}
	f.deleteDone(ev, nil)
	if p1 := f.queue(1); p1["twice"] != 1 || p1["once"] != 1 || len(p1) != 2 {
		t.Errorf("P1 holds %v, want twice and once, one copy each", p1)
	}
	if n := f.delayed(); n != 1 {
		t.Errorf("%d parked in the DLQ, want 1", n)
	}

	// A failed send: the id is a batch item failure, reported once.
	ev = f.seed(body(1, inWindow, 1004, "lost"))
	ev.Records = append(ev.Records, ev.Records[0])
	f.proxy.SetLoseReply(func(op string) bool { return op == "SendMessageBatch" })
	failures, lines, _ = f.handleRaw(ev)
	if len(failures) != 1 || failures[0] != ev.Records[0].MessageId || !lines[1].Retry || !lines[1].DuplicateInEvent {
		t.Errorf("lost reply for a repeated record: failures %v, lines %+v", failures, lines)
	}
}

// Records without a message id (never from SQS, but an event can say
// anything) are not taken for one message: each is sent. One whose send
// fails is reported with its empty id, which Lambda reads as the whole
// batch failed: every record comes back, none is lost.
func TestRecordsWithoutMessageIDAreEachSent(t *testing.T) {
	f := newFixture(t, "1004", 1)
	ev := f.seed(body(1, inWindow, 1004, "anon-1"), body(1, inWindow+1, 1004, "anon-2"), body(9, inWindow, 1004, "anon-p9"))
	for i := range ev.Records {
		ev.Records[i].MessageId = ""
	}
	failures, lines, sum := f.handleRaw(ev)
	if len(failures) != 1 || failures[0] != "" {
		t.Errorf("batch item failures %q, want the one empty id of the P9 record", failures)
	}
	for i, l := range lines {
		if l.DuplicateInEvent || (l.Outcome == "sent") != (i < 2) {
			t.Errorf("record %d logged %+v", i, l)
		}
	}
	if sum.Sent != 2 || sum.Failed != 1 || sum.DuplicatesInEvent != 0 {
		t.Errorf("summary %+v", sum)
	}
	if p1 := f.queue(1); p1["anon-1"] != 1 || p1["anon-2"] != 1 || len(p1) != 2 {
		t.Errorf("P1 holds %v", p1)
	}
}
