package pushreplay

import (
	"sort"

	"github.com/deadletter/deadletter/internal/pushpolicy"
	"github.com/deadletter/deadletter/internal/sqsmove"
)

// Summary is the summary record of a replay: the journal's last line and
// what `pushdlq replay` prints.
type Summary struct {
	Type              string `json:"type"`
	DryRun            bool   `json:"dry_run"`
	Source            string `json:"source"`
	WindowStart       string `json:"window_start"`
	WindowEnd         string `json:"window_end"`
	Codes             string `json:"codes"`
	Scanned           int    `json:"scanned"`
	Eligible          int    `json:"eligible"`
	Ineligible        int    `json:"ineligible"`
	Sent              int    `json:"sent"`
	Parked            int    `json:"parked"`
	Released          int    `json:"released"`
	Failed            int    `json:"failed"`
	DeleteFailed      int    `json:"delete_failed"`
	SkippedDuplicates int    `json:"skipped_duplicates"`
	Abandoned         int    `json:"abandoned"`
	ReleaseFailed     int    `json:"release_failed"`
	// Uncertain counts this run's sends that got no reply: each of those
	// messages is still in the DLQ and may be in its target too.
	Uncertain int `json:"uncertain"`
	// PossibleDuplicates lists every message this run may have delivered
	// twice: its uncertain sends, and the messages an earlier run's send of
	// them left uncertain (sent again by this run or not).
	PossibleDuplicates   int      `json:"possible_duplicates"`
	PossibleDuplicateIDs []string `json:"possible_duplicate_ids"`
	// InFlightElsewhere is the DLQ's in-flight count that is not this run's:
	// messages another consumer or an interrupted run holds invisible.
	InFlightElsewhere int `json:"in_flight_elsewhere"`
	// Delayed is the DLQ's count of delayed messages
	// (ApproximateNumberOfMessagesDelayed): a scan cannot read them.
	Delayed int `json:"delayed"`
	// HoldLost counts eligible messages this run no longer held when their
	// turn came (a renewal of their visibility was refused, or the run was
	// paused past its visibility timeout): not sent, not deleted; they are
	// in the DLQ again, or another consumer has them. HoldLostIDs lists them.
	HoldLost    int      `json:"hold_lost"`
	HoldLostIDs []string `json:"hold_lost_ids"`
	// NotParked counts the ineligible messages a park run meant to park
	// and did not (the park failed, got no reply, was abandoned or its hold
	// was lost, or a later round's plan was declined): they stay in the DLQ
	// (an uncertain one may be there twice: listed among the possible
	// duplicates). They are not in failed, uncertain, abandoned or
	// hold_lost, which count eligible messages: sent + failed + uncertain
	// + hold_lost + abandoned = eligible, and in a park run parked +
	// not_parked = ineligible.
	NotParked int `json:"not_parked"`
	// StillHeld counts messages an interrupted run held that a resume did
	// not find in the DLQ.
	StillHeld int `json:"still_held"`
	// HeldBack counts the eligible messages the replay guard held back
	// (their notification was replayed --max-replays times already): they
	// stay in the DLQ, released or parked as the ineligible ones, and are
	// not counted in ineligible (in a park run parked + not_parked =
	// ineligible + held_back). HeldBackNotifications names them.
	HeldBack              int                    `json:"held_back"`
	HeldBackNotifications []HeldBackNotification `json:"held_back_notifications"`
	Failures              []TargetFailure        `json:"failures"`
	Journal               *string                `json:"journal"`
}

// HeldBackNotification is one notification the replay guard held back:
// how many runs had replayed it already, and how many of its messages
// this run held back.
type HeldBackNotification struct {
	NotificationID string `json:"notification_id"`
	Replays        int    `json:"replays"`
	Messages       int    `json:"messages"`
}

// The fates of a message that was not sent, beside sqsmove's outcomes.
const (
	OutcomeWouldSend sqsmove.Outcome = "would_send" // eligible, in a dry run
	OutcomeReleased  sqsmove.Outcome = "released"   // ineligible, released untouched
)

// Fate is what became of one message.
type Fate struct {
	MessageID string
	Outcome   sqsmove.Outcome
	Command   pushpolicy.Command
	// Target is the queue it went or would go to: its priority queue, or
	// the DLQ when it was parked ("" for none).
	Target string
	NewID  string // the id the queue gave it
	// Reason is why it is not eligible (OutcomeReleased, or parked).
	Reason pushpolicy.Reason
	// NotificationID is the body's notificationId ("" when none).
	NotificationID string
	Err            error // why it failed or is uncertain
	// DeleteFailed: it was sent, but the DLQ did not delete it.
	DeleteFailed error
}

// record notes what the summary lists: failures by target and reason, and
// the messages that may now be in their target twice.
func (r *replayRun) record(res sqsmove.Result) {
	target := res.Route.Target
	if res.Route.Park {
		target = r.source
	}
	switch {
	case res.Outcome == sqsmove.OutcomeFailed && res.Err != nil:
		r.failures.add(target, res.Err)
	case res.Outcome == sqsmove.OutcomeHoldLost && !res.Route.Park:
		r.summary.HoldLostIDs = append(r.summary.HoldLostIDs, res.Msg.MessageID)
	case res.Outcome == sqsmove.OutcomeUncertain,
		(res.Outcome == sqsmove.OutcomeSent || res.Outcome == sqsmove.OutcomeParked) && r.resumed.Uncertain[res.Msg.MessageID]:
		r.summary.PossibleDuplicateIDs = append(r.summary.PossibleDuplicateIDs, res.Msg.MessageID)
	}
}

// parkCounts counts by outcome the parks that did not happen.
type parkCounts struct{ Failed, Uncertain, Abandoned, HoldLost int }

func (p *parkCounts) add(o sqsmove.Outcome) {
	switch o {
	case sqsmove.OutcomeFailed:
		p.Failed++
	case sqsmove.OutcomeUncertain:
		p.Uncertain++
	case sqsmove.OutcomeAbandoned:
		p.Abandoned++
	case sqsmove.OutcomeHoldLost:
		p.HoldLost++
	}
}

// emit tells OnMessage what the replayer did with a message.
func (r *replayRun) emit(res sqsmove.Result) {
	if r.OnMessage == nil {
		return
	}
	f := Fate{MessageID: res.Msg.MessageID, Outcome: res.Outcome, Command: pushpolicy.ParseCommand(res.Msg.Body),
		Target: res.Route.Target, NewID: res.NewID, Err: res.Err, DeleteFailed: res.DeleteFailed,
		NotificationID: pushpolicy.NotificationID(res.Msg.Body)}
	if res.Route.Park {
		if f.Target == "" {
			f.Target = r.source
		}
		f.Reason = r.decide(res.Msg.Body).Decision.Reason
	}
	r.OnMessage(f)
}

// finish releases what is still held (telling OnMessage of each ineligible
// or unsent message), completes the summary and closes the journal with
// it.
func (r *replayRun) finish() {
	if r.hold == nil {
		return
	}
	if r.OnMessage != nil {
		// One fate per message still held, in receive order: the ones a dry
		// run would send, and the ineligible ones being released. Eligible
		// messages of a real run were reported as the replayer went.
		r.hold.Each(func(ord int, st sqsmove.State, m *sqsmove.Message) error {
			if st != sqsmove.Held {
				return nil
			}
			step := r.decide(m.Body)
			switch d := step.Decision; {
			case d.Eligible && r.DryRun:
				r.OnMessage(Fate{MessageID: m.MessageID, Outcome: OutcomeWouldSend, Command: step.Command, Target: d.Target,
					NotificationID: pushpolicy.NotificationID(m.Body)})
			case !d.Eligible:
				r.OnMessage(Fate{MessageID: m.MessageID, Outcome: OutcomeReleased, Command: step.Command, Reason: d.Reason,
					NotificationID: pushpolicy.NotificationID(m.Body)})
			}
			return nil
		})
	}
	if r.s != nil {
		r.summary.Released, r.summary.ReleaseFailed = r.s.Close()
	} else {
		r.hold.Close()
	}
	r.summary.Failures = r.failures.rows()
	r.summary.HeldBack = r.counts.Ineligible[pushpolicy.ReasonHeldBack]
	r.summary.Scanned, r.summary.Eligible, r.summary.Ineligible = r.counts.Scanned, r.counts.Eligible, r.counts.IneligibleTotal()-r.summary.HeldBack
	r.summary.HeldBackNotifications = r.heldBackRows()
	r.listUnresolvedUncertain()
	r.summary.PossibleDuplicates = len(r.summary.PossibleDuplicateIDs)
	// The journal's summary is the one printed: written after the release.
	if r.journal != nil {
		r.journal.Write(sqsmove.Event{Event: sqsmove.EvSummary, Info: r.summary})
		if err := r.journal.Close(); err != nil {
			r.Log("warning: %v", err)
		}
	}
}

// heldBackRows lists the notifications the replay guard held back, by id.
func (r *replayRun) heldBackRows() []HeldBackNotification {
	r.mu.Lock()
	defer r.mu.Unlock()
	rows := make([]HeldBackNotification, 0, len(r.heldBack))
	for id, n := range r.heldBack {
		rows = append(rows, HeldBackNotification{NotificationID: id, Replays: r.Replayed[id], Messages: n})
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].NotificationID < rows[j].NotificationID })
	return rows
}
