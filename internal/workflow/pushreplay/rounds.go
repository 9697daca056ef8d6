package pushreplay

import (
	"context"
	"errors"
	"maps"

	"github.com/deadletter/deadletter/internal/pushpolicy"
	"github.com/deadletter/deadletter/internal/sqsmove"
	"github.com/deadletter/deadletter/internal/workflow/dlqsession"
)

// Rounds: a park run (not streamed, not a dry run, from the DLQ) whose
// scan SQS's in-flight limit stopped replays what it read: each eligible
// message is sent to its target and each ineligible one parked (re-sent
// to the DLQ with a 15-minute delay), and each original deleted, so none
// is in flight any more. It then reads on in the same run, with the same
// journal and replayer, and plans, confirms and replays again, until a
// scan reads the DLQ to its end. It stops reading on, and says how far it
// got as a run stopped by the limit does, when anything of the run is
// still in flight (a send failed or is uncertain, a delete failed, a hold
// was lost, the run is being interrupted), when a round read nothing new
// before the limit (the messages in flight are not this run's), or when a
// scan receives a copy this run parked (its delay ran out: a copy must not
// be parked twice).

func newCounts() Counts {
	return Counts{ByTarget: map[TargetKey]int{}, Ineligible: map[pushpolicy.Reason]int{}}
}

// clone is a copy of c that later counting does not change.
func (c Counts) clone() Counts {
	c.ByTarget, c.Ineligible = maps.Clone(c.ByTarget), maps.Clone(c.Ineligible)
	return c
}

// since is what c counted after base: one round's scan.
func (c Counts) since(base Counts) Counts {
	d := newCounts()
	d.Scanned, d.Eligible, d.AlreadySent = c.Scanned-base.Scanned, c.Eligible-base.Eligible, c.AlreadySent-base.AlreadySent
	for k, n := range c.ByTarget {
		if n -= base.ByTarget[k]; n > 0 {
			d.ByTarget[k] = n
		}
	}
	for k, n := range c.Ineligible {
		if n -= base.Ineligible[k]; n > 0 {
			d.Ineligible[k] = n
		}
	}
	return d
}

// isParkedCopy reports whether a message is a copy this run parked.
func (r *replayRun) isParkedCopy(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.parkedCopies[id]
}

// mayReadOn reports whether the run, its round replayed after a scan that
// SQS's in-flight limit stopped, may read on: a park run that holds
// nothing any more (everything it read was sent or parked, and deleted).
func (r *replayRun) mayReadOn() bool {
	if r.Ineligible != "park" || r.s == nil || r.DryRun || r.streamed || r.ctx.Err() != nil || r.copySeen {
		return false
	}
	if r.Max > 0 && r.counts.Eligible >= r.Max {
		return false
	}
	s := r.summary
	undone := s.Failed + s.Uncertain + s.HoldLost + s.Abandoned + s.NotParked + s.DeleteFailed
	if left := r.hold.InState(sqsmove.Held) + r.hold.InState(sqsmove.Lost); left > 0 || undone > 0 {
		r.Log("not reading on past SQS's in-flight limit: %s of this run are still in the DLQ (failed, uncertain, not parked, not deleted or no longer held)",
			dlqsession.Messages(max(left, undone)))
		return false
	}
	return true
}

// readOn starts the next round: the messages received after the last scan
// stopped (still held), then a scan of the rest. limit is the last scan's
// in-flight limit, replaced by this scan's (nil: it read the DLQ to its
// end). It reports whether the round read anything to plan and replay.
func (r *replayRun) readOn(ctx context.Context, limit **sqsmove.InFlightLimitError) (bool, error) {
	r.roundSent, r.roundParked = r.summary.Sent, r.summary.Parked
	r.round++
	r.roundBase = r.counts.clone()
	r.Log("round %d: the %s read so far are sent or parked, so no longer in flight: reading on past SQS's in-flight limit",
		r.round, dlqsession.Messages(r.counts.Scanned))
	err := r.hold.Readmit(r.observe)
	if err == nil && !r.copySeen && !(r.Max > 0 && r.counts.Eligible >= r.Max) {
		err = r.s.ScanWith(ctx, 0, 2, r.observe)
	}
	last := *limit
	*limit = nil
	if errors.As(err, limit) {
		err = nil
	}
	if err != nil {
		return false, err
	}
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	read := r.counts.Scanned > r.roundBase.Scanned
	switch {
	case r.copySeen:
		// The rest of the DLQ may not have been read: said as the limit
		// says it.
		r.Log("stopped reading on: the scan received a copy this run parked (its delay of %d seconds ran out during the run); it is not parked twice",
			pushpolicy.ParkDelaySeconds)
		if *limit == nil {
			*limit = &sqsmove.InFlightLimitError{Held: r.hold.Len(), Err: last.Err}
		}
	case !read && *limit != nil:
		r.Log("stopped reading on: SQS's in-flight limit stopped the scan again before it read anything new (the messages in flight are not this run's)")
	case !read:
		r.Log("round %d read nothing more: the DLQ is read to its end", r.round)
	}
	if !read {
		r.inFlightElsewhere(ctx) // counted again, after the last round
	}
	return read, nil
}

// stopRound ends the run before its round was replayed. The eligible
// messages a round after the first read are reported abandoned (they stay
// in the DLQ: released), so that sent + failed + uncertain + hold_lost +
// abandoned = eligible over the whole run, as when a replay is
// interrupted; its ineligible ones are counted not parked.
func (r *replayRun) stopRound(err error) error {
	if r.round < 2 {
		return err
	}
	_ = r.hold.Each(func(ord int, st sqsmove.State, m *sqsmove.Message) error {
		if st != sqsmove.Held || r.resumed.Moved[m.MessageID] || r.isParkedCopy(m.MessageID) {
			return nil
		}
		step := r.decide(m.Body)
		if !step.Decision.Eligible {
			r.summary.NotParked++ // released at the end, as its fate says
			return nil
		}
		r.summary.Abandoned++
		r.emit(sqsmove.Result{Ord: ord, Msg: m, Route: step.Route, Outcome: sqsmove.OutcomeAbandoned})
		return nil
	})
	return err
}
