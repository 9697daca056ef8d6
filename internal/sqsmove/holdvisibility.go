package sqsmove

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/deadletter/deadletter/internal/awsconfig"
)

// What a hold does with the messages it holds: delete them, release them,
// keep them invisible (Extend, KeepAlive), and the batched calls with their
// per-entry errors and retries.

// Ref is one held message, to delete or release.
type Ref struct {
	Ord int
	Msg *Message
}

// Delete removes messages from the queue, retrying entries that failed
// (deleting again is harmless). It returns the messages it could not
// delete, with the reason.
func (h *Hold) Delete(ctx context.Context, msgs []Ref) map[int]error {
	if h.api == nil {
		for _, m := range msgs {
			h.setState(m.Ord, Done)
		}
		return nil
	}
	failed := h.batchCall(ctx, msgs, func(ctx context.Context, ids, handles []string) (map[string]error, error) {
		entries := make([]types.DeleteMessageBatchRequestEntry, len(ids))
		for i := range ids {
			entries[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(ids[i]), ReceiptHandle: aws.String(handles[i])}
		}
		out, err := h.api.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(h.queueURL), Entries: entries})
		if err != nil {
			return nil, err
		}
		return entryErrors(out.Failed), nil
	})
	for _, m := range msgs {
		if _, bad := failed[m.Ord]; !bad {
			h.setState(m.Ord, Done)
		}
	}
	return failed
}

// setVisibility changes the visibility of messages; 0 releases them.
func (h *Hold) setVisibility(ctx context.Context, msgs []Ref, d time.Duration) map[int]error {
	if h.api == nil {
		return nil
	}
	return h.batchCall(ctx, msgs, func(ctx context.Context, ids, handles []string) (map[string]error, error) {
		entries := make([]types.ChangeMessageVisibilityBatchRequestEntry, len(ids))
		for i := range ids {
			entries[i] = types.ChangeMessageVisibilityBatchRequestEntry{Id: aws.String(ids[i]), ReceiptHandle: aws.String(handles[i]), VisibilityTimeout: int32(d / time.Second)}
		}
		out, err := h.api.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(h.queueURL), Entries: entries})
		if err != nil {
			return nil, err
		}
		return entryErrors(out.Failed), nil
	})
}

// Release makes every message still held (or Extra) visible again, so that nothing
// stays hidden for a visibility timeout after the run. It returns how many
// it released and the errors of those it could not (they become visible by
// themselves when their visibility timeout runs out).
func (h *Hold) Release(ctx context.Context) (int, map[int]error) {
	released := 0
	failures := map[int]error{}
	if !h.anyHeld() {
		return 0, failures // nothing to release: no walk over the spool
	}
	err := h.EachBatch(100, true, func(batch []Ref) {
		failed := h.setVisibility(ctx, batch, 0)
		for _, m := range batch {
			if err, bad := failed[m.Ord]; bad {
				failures[m.Ord] = err
				continue
			}
			h.setState(m.Ord, Released)
			released++
		}
	})
	if err != nil {
		failures[-1] = err
	}
	return released, failures
}

// Extend renews the visibility timeout of every message still held. A
// message whose renewal is refused because its receipt handle is no
// longer valid is Lost (unless it was deleted meanwhile); when the hold's
// deadline has already passed, every held message is Lost and nothing is
// renewed: others may have received them meanwhile.
func (h *Hold) Extend(ctx context.Context) error {
	h.mu.Lock()
	start := time.Now()
	expired := !h.safeUntil.IsZero() && !start.Before(h.safeUntil)
	h.extended = start
	before, until := h.beforeExtend, h.extended.Add(h.visibility)
	h.mu.Unlock()
	if expired {
		if h.loseAll() == 0 {
			return nil
		}
		return fmt.Errorf("the hold on the messages ran out (the process was paused past the visibility timeout of %s); they are visible again and are not sent by this run", h.visibility)
	}
	if before != nil {
		before(until)
	}
	var firstErr error
	err := h.EachBatch(100, true, func(batch []Ref) {
		for ord, err := range h.setVisibility(ctx, batch, h.visibility) {
			if isGone(err) {
				// Deleted meanwhile (not an error), or no longer ours.
				h.lose(ord)
				continue
			}
			if firstErr == nil {
				firstErr = err
			}
		}
	})
	if err != nil {
		return err
	}
	if firstErr == nil {
		h.mu.Lock()
		if until.After(h.safeUntil) {
			h.safeUntil = until
		}
		h.mu.Unlock()
	}
	return firstErr
}

// lose marks a message no longer held, unless it was dealt with already.
func (h *Hold) lose(ord int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s := h.state[ord]; s == Held || s == Extra {
		h.state[ord] = Lost
		delete(h.rehandle, int32(ord))
	}
}

// loseAll marks every message still held (or Extra) Lost, and returns
// how many it marked.
func (h *Hold) loseAll() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for i, s := range h.state {
		if s == Held || s == Extra {
			h.state[i] = Lost
			delete(h.rehandle, int32(i))
			n++
		}
	}
	return n
}

// Expiring reports whether the hold's deadline is less than margin away
// (or past): a send started now might still be in flight when others can
// receive the message. A hold without a source queue never expires. When
// it reports true, every message still held is marked Lost.
func (h *Hold) Expiring(margin time.Duration) bool {
	if h.api == nil {
		return false
	}
	h.mu.Lock()
	expiring := !h.safeUntil.IsZero() && !time.Now().Add(margin).Before(h.safeUntil)
	h.mu.Unlock()
	if expiring {
		h.loseAll()
	}
	return expiring
}

// Margin is how far from the hold's deadline a send may still start: a
// quarter of the visibility timeout, at most 30 seconds.
func (h *Hold) Margin() time.Duration {
	return min(h.visibility/4, 30*time.Second)
}

// EachBatch streams the messages still held, n at a time; withExtra adds
// the Extra ones (those that must be released but never acted on).
func (h *Hold) EachBatch(n int, withExtra bool, fn func([]Ref)) error {
	var batch []Ref
	err := h.Each(func(ord int, st State, m *Message) error {
		if st == Held || (withExtra && st == Extra) {
			batch = append(batch, Ref{ord, m})
			if len(batch) == n {
				fn(batch)
				batch = nil
			}
		}
		return nil
	})
	if len(batch) > 0 {
		fn(batch)
	}
	return err
}

// KeepAlive extends the visibility of held messages whenever half of the
// visibility timeout has passed since it was last set, until ctx ends. It
// reports extension failures to warn.
func (h *Hold) KeepAlive(ctx context.Context, warn func(error)) {
	tick := h.visibility / 10
	if tick < 100*time.Millisecond {
		tick = 100 * time.Millisecond
	}
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			h.mu.Lock()
			due := !h.extended.IsZero() && time.Since(h.extended) >= h.visibility/2
			h.mu.Unlock()
			if due {
				if err := h.Extend(ctx); err != nil && ctx.Err() == nil && warn != nil {
					warn(err)
				}
			}
		}
	}
}

// batchCall runs a 10-entry batch API over msgs, retrying failed entries
// with a short backoff; it returns the entries that still failed.
func (h *Hold) batchCall(ctx context.Context, msgs []Ref, call func(ctx context.Context, ids, handles []string) (map[string]error, error)) map[int]error {
	failed := map[int]error{}
	pending := append([]Ref(nil), msgs...)
	for attempt := 0; len(pending) > 0; attempt++ {
		var next []Ref
		for start := 0; start < len(pending); start += 10 {
			chunk := pending[start:min(start+10, len(pending))]
			ids := make([]string, len(chunk))
			handles := make([]string, len(chunk))
			byID := map[string]Ref{}
			for i, m := range chunk {
				ids[i] = fmt.Sprint(i)
				handles[i] = h.handle(m.Ord, m.Msg)
				byID[ids[i]] = m
			}
			errs, err := call(ctx, ids, handles)
			if err != nil {
				for _, m := range chunk {
					failed[m.Ord] = err
				}
				if !awsconfig.IsAuthError(err) { // a refused permission stays refused
					next = append(next, chunk...)
				}
				continue
			}
			for _, m := range chunk {
				delete(failed, m.Ord)
			}
			for id, e := range errs {
				failed[byID[id].Ord] = e
				if !isGone(e) {
					next = append(next, byID[id])
				}
			}
		}
		if attempt == 2 || ctx.Err() != nil {
			break
		}
		pending = next
		if len(pending) > 0 {
			sleep(ctx, time.Duration(100<<attempt)*time.Millisecond)
		}
	}
	return failed
}

// EntryError is one failed entry of a batch call.
type EntryError struct {
	Code        string
	Message     string
	SenderFault bool
}

func (e *EntryError) Error() string {
	if e.Message == "" {
		return e.Code
	}
	return e.Code + ": " + e.Message
}

func entryErrors(failed []types.BatchResultErrorEntry) map[string]error {
	out := make(map[string]error, len(failed))
	for _, f := range failed {
		out[aws.ToString(f.Id)] = &EntryError{Code: aws.ToString(f.Code), Message: aws.ToString(f.Message), SenderFault: f.SenderFault}
	}
	return out
}

// isGone reports an entry error that retrying cannot fix: the receipt
// handle is no longer valid (the message was deleted or received again).
func isGone(err error) bool {
	var ee *EntryError
	if errors.As(err, &ee) {
		return strings.Contains(ee.Code, "ReceiptHandleIsInvalid") || strings.Contains(ee.Code, "InvalidParameterValue") ||
			strings.Contains(ee.Code, "MessageNotInflight")
	}
	return false
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
