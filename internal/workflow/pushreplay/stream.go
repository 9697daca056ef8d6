package pushreplay

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/deadletter/deadletter/internal/pushpolicy"
	"github.com/deadletter/deadletter/internal/sqsmove"
	"github.com/deadletter/deadletter/internal/workflow/dlqsession"
)

func (r *replayRun) scan(ctx context.Context) error {
	api, where, err := r.SQS(ctx)
	if err != nil {
		return err
	}
	s, err := dlqsession.OpenSession(ctx, api, where, r.Queue, r.Out)
	if err != nil {
		return err
	}
	r.s, r.hold, r.source = s, s.Hold, s.Queue.URL
	r.summary.Source = s.Queue.URL
	if r.Resume != "" {
		// Now that the DLQ is resolved to its URL, before anything is read.
		if err := r.checkResumeJournal(s.Queue.URL); err != nil {
			r.refused = true
			return err
		}
	}
	if r.streamed && MayTargetTheDLQ(s.Queue.URL, r.BaseURL) {
		r.streamed = false // checked against the whole plan first, before anything is sent
	}
	// The replay moves messages and never shows their system attributes:
	// it receives only the one a send uses (a FIFO target's group id).
	s.SystemAttributes = sqsmove.MoveAttributes
	// A streamed replay sends its partial batches as soon as a receive
	// finds the DLQ drained, during the last long poll, not after it.
	s.OnEmpty = func() {
		if r.streaming != nil {
			r.streaming.Flush()
		}
	}
	s.Banner("replay")
	receivers := 2
	if r.streamed {
		// The scan feeds the sends: as many receives in flight as it takes
		// to keep the batches in flight fed.
		receivers = streamReceivers(r.Concurrency)
	}
	return s.ScanWith(ctx, 0, receivers, r.observe)
}

// streamReceivers is how many receive loops feed a streamed replay of
// concurrency batches in flight: half as many, so that a message's three
// calls (receive, send, delete; a send and a delete per batch) keep the
// calls in flight near concurrency. With a quarter (4 at the default 16),
// the receives were the line at 20 ms from SQS: 994 msgs/s against the
// raw mover's 1,265 (0.77x); with 8, 1,312-1,382 (1.09x), and 0.94-0.95x at
// 0 and 2 ms as before (COUNT=3000 RTT=20ms scripts/bench-pushdlq). The
// end of the scan costs a few more empty polls (308 receives for 3,000
// messages instead of 304).
func streamReceivers(concurrency int) int {
	return min(max(2, concurrency/2), 16)
}

func (r *replayRun) load(ctx context.Context) error {
	hold, err := sqsmove.NewHold(nil, "", time.Minute)
	if err != nil {
		return err
	}
	r.hold, r.source = hold, r.FromFile
	r.summary.Source = r.FromFile
	fh, err := os.Open(r.FromFile)
	if err != nil {
		return fmt.Errorf("--from-file: %w", err)
	}
	defer fh.Close()
	return hold.Load(fh, r.FromFile, r.observe)
}

// observe decides one scanned message and counts it; it stops the scan
// once Max eligible messages are held.
func (r *replayRun) observe(ord int, m *sqsmove.Message) bool {
	st := r.decide(m.Body)
	r.mu.Lock() // the replay's progress reads the counts
	if r.parkedCopies[m.MessageID] {
		// A copy this run parked, visible again: not a message of the DLQ
		// to count or park again. The scan stops, and so does the run
		// (rounds.go); the copy is released.
		r.copySeen = true
		r.mu.Unlock()
		return true
	}
	r.counts.Scanned++
	delete(r.resumed.Held, m.MessageID) // it came back: the interrupted run no longer holds it
	if r.resumed.Moved[m.MessageID] {
		r.counts.AlreadySent++
		r.mu.Unlock()
		return false
	}
	r.counts.decided(st)
	if st.Decision.Reason == pushpolicy.ReasonHeldBack {
		r.heldBack[pushpolicy.NotificationID(m.Body)]++
	}
	stop := r.Max > 0 && r.counts.Eligible >= r.Max
	r.mu.Unlock()
	if r.streamed {
		return r.offer(ord, m, st) || stop
	}
	return stop
}

// offer hands a scanned message to the streamed replay, starting it at
// the first eligible message (a scan that finds none writes no journal,
// as before). It says to stop the scan when the replay cannot start.
func (r *replayRun) offer(ord int, m *sqsmove.Message, st Step) (stop bool) {
	if r.streamErr != nil {
		return true
	}
	var rt sqsmove.Route
	if st.Decision.Eligible {
		rt = st.Route
		if r.isDLQ(rt.Target) {
			r.streamErr = &dlqsession.UsageError{Err: TargetIsDLQError(st.Command.Priority, rt.Target)}
			return true
		}
	}
	if r.streaming == nil {
		if !st.Decision.Eligible {
			return false // its held record is written when the replay starts
		}
		rp, err := r.replayer(r.ctx)
		if err == nil {
			r.streaming, err = rp.Start(r.ctx)
		}
		if err != nil {
			r.streamErr = err
			return true
		}
	}
	r.streaming.Offer(ord, m, rt)
	return false
}

// isDLQ reports whether a target is the DLQ itself, comparing each target
// once (a replay has a few targets and many messages).
func (r *replayRun) isDLQ(target string) bool {
	same, ok := r.targetIsDLQ[target]
	if !ok {
		if r.targetIsDLQ == nil {
			r.targetIsDLQ = map[string]bool{}
		}
		same = TargetIsDLQ(target, r.s.Queue.URL)
		r.targetIsDLQ[target] = same
	}
	return same
}

// decide is the processor's decision and route for a body (Decide: one
// function for both).
// An eligible message whose notification is at the replay guard's limit
// is held back: routed as an ineligible one.
func (r *replayRun) decide(body string) Step {
	st := Decide(body, r.Policy, r.BaseURL)
	if st.Decision.Eligible && r.MaxReplays > 0 && len(r.Replayed) > 0 {
		if id := pushpolicy.NotificationID(body); id != "" && r.Replayed[id] >= r.MaxReplays {
			st.Decision = pushpolicy.Decision{Reason: pushpolicy.ReasonHeldBack}
			st.Route = sqsmove.Route{Park: true, Delay: pushpolicy.ParkDelaySeconds}
		}
	}
	return st
}

// route is the processor's route, except that ineligible messages are
// parked only under Ineligible "park" (and only when there is a DLQ);
// otherwise they route nowhere and are released.
func (r *replayRun) route(m *sqsmove.Message) sqsmove.Route {
	if r.isParkedCopy(m.MessageID) {
		return sqsmove.Route{} // released, never parked twice
	}
	st := r.decide(m.Body)
	if st.Decision.Eligible || (r.Ineligible == "park" && r.s != nil) {
		return st.Route
	}
	return sqsmove.Route{}
}

// replay replays the held messages; each round of a run that reads on
// past SQS's in-flight limit goes through the same replayer (one journal
// run, counts that add up).
func (r *replayRun) replay(ctx context.Context) error {
	if r.rp == nil {
		rp, err := r.replayer(ctx)
		if err != nil {
			return err
		}
		r.rp = rp
	}
	counts, err := r.rp.Run(ctx)
	return r.replayed(counts, err)
}

// replayer opens the journal (once a run) and prepares the replay of the
// held messages.
func (r *replayRun) replayer(ctx context.Context) (*sqsmove.Replayer, error) {
	if r.BeforeMove != nil {
		if err := r.BeforeMove(); err != nil {
			return nil, err
		}
	}
	path, err := r.journalPath()
	if err != nil {
		return nil, err
	}
	if r.journal, err = sqsmove.OpenJournal(path); err != nil {
		return nil, err
	}
	r.summary.Journal = &path
	r.Log("journal: %s", path)
	// Write-ahead: the journal knows how long the held messages may stay
	// invisible before their visibility is extended to then.
	journal := r.journal
	r.hold.BeforeExtend(func(until time.Time) {
		journal.Write(sqsmove.Event{Event: sqsmove.EvHoldUntil, Until: until.UTC().Format(time.RFC3339Nano)})
		if err := journal.Sync(); err != nil {
			r.Log("warning: %v", err)
		}
	})
	api, err := r.api(ctx)
	if err != nil {
		return nil, err
	}
	r.progress = r.StartProgress()
	done := 0
	return &sqsmove.Replayer{
		API: api, Hold: r.hold, Source: sourceURL(r.s), Journal: r.journal,
		Concurrency: r.Concurrency, Rate: r.Rate, Moved: r.resumed.Moved, Route: r.route,
		RunInfo: map[string]any{"source": r.source, "queue_base_url": r.BaseURL, "window_start": r.summary.WindowStart,
			"window_end": r.summary.WindowEnd, "codes": r.summary.Codes, "ineligible": r.Ineligible},
		OnResult: func(res sqsmove.Result) {
			r.mu.Lock()
			defer r.mu.Unlock()
			done++
			r.progress.Update("replaying: %d of %d done", done, r.counts.Eligible+r.counts.AlreadySent)
			if res.Outcome == sqsmove.OutcomeParked && res.NewID != "" {
				r.parkedCopies[res.NewID] = true
			}
			if res.Route.Park {
				r.parkTrouble.add(res.Outcome)
			}
			r.record(res)
			r.emit(res)
		},
	}, nil
}

// replayed notes what the replay came to in the summary (the replayer's
// counts: over every round so far), and what stopped it.
func (r *replayRun) replayed(counts sqsmove.Counts, err error) error {
	r.progress.Clear()
	// The replayer counts every message it routes; a park that did not
	// happen is an ineligible message's, counted not_parked.
	r.mu.Lock()
	p := r.parkTrouble
	r.mu.Unlock()
	r.summary.Sent, r.summary.Parked, r.summary.Failed = counts.Sent, counts.Parked, counts.Failed-p.Failed
	r.summary.DeleteFailed, r.summary.SkippedDuplicates, r.summary.Abandoned = counts.DeleteFailed, counts.SkippedDuplicates, counts.Abandoned-p.Abandoned
	r.summary.Uncertain, r.summary.HoldLost = counts.Uncertain-p.Uncertain, counts.HoldLost-p.HoldLost
	r.summary.NotParked = p.Failed + p.Uncertain + p.Abandoned + p.HoldLost
	if errors.Is(err, sqsmove.ErrDeleteRefused) {
		r.deleteRefused = &DeleteRefusedError{Err: err, Count: counts.DeleteFailed, Journal: *r.summary.Journal}
		return r.deleteRefused
	}
	if err != nil {
		return err
	}
	return r.ctx.Err()
}

// sourceURL is the DLQ's URL; "" without a session (a run from a file).
func sourceURL(s *dlqsession.Session) string {
	if s == nil {
		return ""
	}
	return s.Queue.URL
}
