// Package pushreplay is the replay workflow shared by `pushdlq replay` and
// the push-dlq processor: the one step from a message body to a decision
// and a route (Decide), the processor's whole batch (Process), and the
// CLI's whole run (Run: scan or stream, the DLQ guards, the journal and
// resume, the finish), driven from its Options with callbacks for what it
// has to say. The policy itself is internal/pushpolicy; moving messages is
// internal/sqsmove; the DLQ a run scans is read through a
// internal/workflow/dlqsession Session.
package pushreplay

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/deadletter/deadletter/internal/pushpolicy"
	"github.com/deadletter/deadletter/internal/sqsmove"
)

// Step is what the replay does with one message.
type Step struct {
	Command  pushpolicy.Command
	Decision pushpolicy.Decision
	// Route: an eligible message goes to Decision.Target; anything else,
	// a malformed body included, is parked in the DLQ with
	// pushpolicy.ParkDelaySeconds of delay.
	Route sqsmove.Route
}

// Decide parses a DLQ message body and applies the policy to it, for the
// CLI and the processor alike.
func Decide(body string, p pushpolicy.Policy, base string) Step {
	c := pushpolicy.ParseCommand(body)
	d := pushpolicy.Decide(c, p, base)
	st := Step{Command: c, Decision: d}
	if d.Eligible {
		st.Route = sqsmove.Route{Target: d.Target}
	} else {
		st.Route = sqsmove.Route{Park: true, Delay: pushpolicy.ParkDelaySeconds}
	}
	return st
}

// Result is what became of one record of a batch.
type Result struct {
	MessageID string
	Step      Step
	// Queue is where the record was sent: its target, or the DLQ when it
	// was parked.
	Queue   string
	Outcome sqsmove.Outcome // sent, parked, failed or uncertain
	NewID   string          // the id the queue gave it
	Err     error           // why it failed or is uncertain
	// DuplicateOf is, for a record with the same message id as an earlier
	// record of the batch (SQS's at-least-once delivery can put one message
	// in a batch twice), the index of that record, whose result it shares:
	// it is not sent a second time. -1 otherwise.
	DuplicateOf int
}

// Retry reports whether the record must be a batch item failure: its send
// failed (it is nowhere else) or got no reply (it may be in its queue: a
// retry may deliver it twice, which at-least-once delivery allows, while
// dropping it could lose it). A record that was sent or parked never is.
func (r Result) Retry() bool {
	return r.Outcome != sqsmove.OutcomeSent && r.Outcome != sqsmove.OutcomeParked
}

// PossibleDuplicate reports a record whose send got no reply: it may be in
// its queue already, and its retry may put it there twice.
func (r Result) PossibleDuplicate() bool { return r.Outcome == sqsmove.OutcomeUncertain }

// ErrTargetIsDLQ says why an eligible message was parked instead: its
// target queue is the DLQ itself (PUSH_QUEUE_BASE_URL is wrong), and
// sending it there without a delay would loop on it.
var ErrTargetIsDLQ = errors.New("the target queue is the DLQ itself (check PUSH_QUEUE_BASE_URL); parked instead")

// TargetIsDLQ reports whether a replay target is the DLQ itself: the one
// check the processor, a planned replay and a streamed one all make
// (sending a message back to its own DLQ without a delay would loop on it).
func TargetIsDLQ(target, dlq string) bool { return sqsmove.SameQueue(target, dlq) }

// MayTargetTheDLQ reports whether some priority's queue (base + "P" + a
// number) is the DLQ itself, from the URLs alone: a replay that might is
// planned whole first, so that such a plan is refused before anything is
// sent.
func MayTargetTheDLQ(dlq, base string) bool {
	dlq = strings.TrimRight(dlq, "/")
	for i := strings.LastIndexByte(dlq, 'P'); i >= 0; i = strings.LastIndexByte(dlq[:i], 'P') {
		if p, err := strconv.Atoi(dlq[i+1:]); err == nil && TargetIsDLQ(pushpolicy.TargetURL(base, p), dlq) {
			return true
		}
	}
	return false
}

// TargetIsDLQError is the CLI's refusal of a plan whose priority goes to
// the DLQ itself.
func TargetIsDLQError(priority int, target string) error {
	return fmt.Errorf("priority %d would be replayed to %s, which is the DLQ itself; check --queue-base-url", priority, target)
}

// Process decides every message of one batch and sends each to its route:
// eligible ones to their priority queue, the rest parked in cfg.DLQURL with
// DelaySeconds 900, message attributes kept, batched per queue. It returns
// one Result per message, in order; a message that appears twice (the
// same message id) is sent once, and both records get its result. The caller deletes from its source (or
// lets the event source mapping delete) exactly the messages whose Result
// does not ask for a retry.
func Process(ctx context.Context, api sqsmove.API, cfg pushpolicy.Config, msgs []*sqsmove.Message) []Result {
	results := make([]Result, len(msgs))
	items := make([]sqsmove.Item, 0, len(msgs))
	sendOrd := make([]int, 0, len(msgs)) // items[k] is results[sendOrd[k]]
	first := map[string]int{}
	for i, m := range msgs {
		r := &results[i]
		r.DuplicateOf = -1
		if j, dup := first[m.MessageID]; dup && m.MessageID != "" {
			r.DuplicateOf = j
			continue
		}
		first[m.MessageID] = i
		st := Decide(m.Body, cfg.Policy, cfg.BaseURL)
		r.MessageID, r.Step, r.Queue = m.MessageID, st, cfg.DLQURL
		if st.Decision.Eligible {
			r.Queue = st.Decision.Target
			if TargetIsDLQ(r.Queue, cfg.DLQURL) {
				r.Queue, r.Err = cfg.DLQURL, ErrTargetIsDLQ
				st.Route = sqsmove.Route{Park: true, Delay: pushpolicy.ParkDelaySeconds}
				r.Step.Route = st.Route // logged as parked, which it is
			}
		}
		items = append(items, sqsmove.Item{Msg: m, Queue: r.Queue, Route: st.Route})
		sendOrd = append(sendOrd, i)
	}
	for k, s := range sqsmove.Send(ctx, api, items, 4) {
		r := &results[sendOrd[k]]
		r.Outcome, r.NewID = s.Outcome, s.NewID
		if s.Err != nil {
			r.Err = s.Err
		}
		if r.Retry() && r.Err == nil {
			r.Err = fmt.Errorf("send to %s: %s", r.Queue, r.Outcome)
		}
	}
	for i := range results {
		if j := results[i].DuplicateOf; j >= 0 {
			results[i] = results[j]
			results[i].DuplicateOf = j
		}
	}
	return results
}
