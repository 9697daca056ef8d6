package pushreplay

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/deadletter/deadletter/internal/sqsmove"
	"github.com/deadletter/deadletter/internal/workflow/dlqsession"
)

// checkResumeJournal refuses a --resume file that is not a replay journal
// (an export file, say), or the journal of a replay of another DLQ than
// dlq: its held messages would never come back here, and this run would
// be appended to another queue's journal. dlq is the DLQ as given
// (checked when it is a URL or a queue name) or its resolved URL.
func (r *replayRun) checkResumeJournal(dlq string) error {
	res := r.resumed
	if res.Lines > 0 && res.First != sqsmove.EvRun {
		return refusef("--resume %s is not a replay journal (its first line is not a %q event; an export file is replayed with --from-file); left as it is",
			r.Resume, sqsmove.EvRun)
	}
	if r.FromFile != "" {
		return nil
	}
	for _, src := range res.Sources {
		if src == "" {
			continue // a run from an export file, or one that did not say
		}
		other := src != dlq
		if !strings.Contains(dlq, "://") {
			other = !strings.ContainsAny(dlq, "/:") && path.Base(src) != dlq
		}
		if other {
			return refusef("--resume %s is the journal of a replay of %s, not of --dlq %s; resume it with its own DLQ (journal left as it is)",
				r.Resume, src, dlq)
		}
	}
	return nil
}

// HeldTooLongError refuses a resume that would wait longer than
// --wait-held for the messages the interrupted run holds.
type HeldTooLongError struct {
	Held  int
	Until time.Time
	Wait  time.Duration
}

// WaitHeld is the --wait-held that would let the resume wait for them.
func (e *HeldTooLongError) WaitHeld() time.Duration { return e.Wait.Round(time.Minute) + time.Minute }

func (e *HeldTooLongError) Error() string {
	return fmt.Sprintf("the interrupted run holds %s invisible until %s (%s from now); resume after then, or pass --wait-held %s",
		dlqsession.Messages(e.Held), e.Until.UTC().Format(time.RFC3339), e.Wait.Round(time.Second), e.WaitHeld())
}

// waitForHeld makes a resume wait until the messages the interrupted run
// held are visible again: scanning earlier finds nothing of them, and a
// message sent but not deleted would reappear later, in both places.
func (r *replayRun) waitForHeld(ctx context.Context) error {
	held, until := len(r.resumed.Held), r.resumed.HeldUntil
	wait := time.Until(until)
	if held == 0 || wait <= 0 {
		return nil
	}
	if wait > r.WaitHeld {
		return &HeldTooLongError{Held: held, Until: until, Wait: wait}
	}
	// A second more: SQS makes them visible at about that time, not before.
	wait += time.Second
	r.Log("the interrupted run holds %s invisible until %s: waiting %s for them (Ctrl-C stops)",
		dlqsession.Messages(held), until.UTC().Format(time.RFC3339), wait.Round(time.Second))
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
	}
	return nil
}

// listUnresolvedUncertain lists the messages whose send the resumed
// journal left uncertain and that this run did not send (no longer
// eligible, failed, not seen): they may be in their target and in the DLQ
// still, so they stay possible duplicates, and the run is partial.
func (r *replayRun) listUnresolvedUncertain() {
	if r.DryRun || len(r.resumed.Uncertain) == 0 {
		return
	}
	listed := map[string]bool{}
	for _, id := range r.summary.PossibleDuplicateIDs {
		listed[id] = true
	}
	var ids []string
	for id := range r.resumed.Uncertain {
		if !listed[id] {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	r.unresolved = len(ids)
	r.summary.PossibleDuplicateIDs = append(r.summary.PossibleDuplicateIDs, ids...)
}

func (r *replayRun) journalPath() (string, error) {
	switch {
	case r.Resume != "":
		return r.Resume, nil
	case r.Journal != "":
		return r.Journal, nil
	}
	dir, err := r.StateDir()
	if err != nil {
		return "", fmt.Errorf("no place for the journal (pass --journal): %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("create the journal directory (or pass --journal): %w", err)
	}
	return filepath.Join(dir, "replay-"+r.Now().UTC().Format("20060102T150405Z")+"-"+fmt.Sprint(os.Getpid())+".ndjson"), nil
}

// refusef is a refusal of the run's inputs (the CLI's exit 2).
func refusef(format string, args ...any) error {
	return &dlqsession.UsageError{Err: fmt.Errorf(format, args...)}
}
