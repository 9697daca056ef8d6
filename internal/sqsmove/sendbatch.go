package sqsmove

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/deadletter/deadletter/internal/awsconfig"
)

// Sending one batch to its target: the SendMessageBatch entries, what an
// answer (or its absence) means for each message (sent, failed, uncertain),
// and the delete of what was sent. replay.go orchestrates the batches.

// sentBatch is a batch whose send came back, with its outcome records
// written (not yet synced) and what is left to do: the delete of what the
// target accepted, and the results.
type sentBatch struct {
	work     context.Context // the run's context, without its cancel: a sent batch is always finished
	b        *batch
	seq      int64
	res      sendResult
	toDelete []Ref
	outcome  Outcome
	// journalEnd is the journal's end once its outcome records were
	// written: the delete waits until the journal is durable up to there.
	journalEnd int64
}

// send sends one batch and deletes from the source what the target
// accepted. In-flight work is finished even when ctx is cancelled: a batch
// that was sent is always deleted and journalled.
func (r *Replayer) send(ctx context.Context, b *batch, isCanary bool) error {
	sb, err := r.sendBatch(ctx, b, isCanary, nil)
	if sb != nil {
		r.finishSent(sb)
	}
	return err
}

// sendBatch is the first half of send: the send record, synced, then the
// send, then the outcome records (buffered). beforeSend, when not nil, is
// called once the send record is durable, right before the send. It
// returns nil when nothing was sent.
func (r *Replayer) sendBatch(ctx context.Context, b *batch, isCanary bool, beforeSend func()) (*sentBatch, error) {
	if r.limiter != nil {
		if err := r.limiter.wait(ctx, len(b.entries)); err != nil {
			r.abandon(b)
			return nil, nil
		}
	}
	r.stillHeld(b)
	if len(b.entries) == 0 {
		return nil, nil
	}
	work := context.WithoutCancel(ctx)
	seq := r.batchSeq.Add(1)
	ids := make([]string, len(b.entries))
	for i, e := range b.entries {
		ids[i] = e.Msg.MessageID
	}
	err := r.Journal.Write(Event{Event: EvSend, Batch: seq, Target: b.target, IDs: ids})
	if err == nil {
		err = r.Journal.Sync()
	}
	if err != nil {
		// Without the write-ahead record there is no sending.
		r.setFatal(err)
		r.abandon(b)
		return nil, err
	}
	r.countsMu.Lock()
	r.counts.Batches++
	r.countsMu.Unlock()
	if beforeSend != nil {
		beforeSend()
	}

	res := sendEntries(work, r.API, b)
	// Paused past the hold's deadline while the send was in flight: the
	// messages were ours when sent, but others may have received them since.
	r.Hold.Expiring(0)
	if isCanary && res.callErr != nil {
		// The whole call failed on the first message for this target: the
		// target is missing or refuses us. Touch nothing else for it.
		r.deadMu.Lock()
		r.dead[b.target] = fmt.Errorf("%w: %w", ErrTargetRejected, res.callErr)
		r.deadMu.Unlock()
	}
	if isCanary && len(res.uncertain) > 0 {
		// The canary may or may not have arrived: the target is not proven,
		// so nothing else goes there in this run.
		r.deadMu.Lock()
		r.dead[b.target] = fmt.Errorf("%w: %w", ErrCanaryUncertain, res.uncertain[b.entries[0].Ord])
		r.deadMu.Unlock()
	}
	if res.callErr != nil && awsconfig.IsAuthError(res.callErr) {
		r.setFatal(res.callErr) // credentials refused or expired: stop sending anywhere
	}
	outcome, event := OutcomeSent, EvSent
	if b.park {
		outcome, event = OutcomeParked, EvParked
	}
	var toDelete []Ref
	for _, e := range b.entries {
		id, ok := res.accepted[e.Ord]
		if !ok {
			continue
		}
		_ = r.Journal.Write(Event{Event: event, Batch: seq, ID: e.Msg.MessageID, Target: b.target, NewID: id})
		if r.Hold.State(e.Ord) == Lost {
			// The hold was lost while the send was in flight: another
			// consumer may have received the message and replayed it too.
			// It is not deleted (it is not ours), and it may now be in its
			// target twice. A resume deletes it if it is still in the DLQ.
			delete(res.accepted, e.Ord)
			res.uncertain[e.Ord] = fmt.Errorf("sent (new id %s), but the run lost its hold on it meanwhile, so another consumer may have replayed it too: %w", id, ErrHoldLost)
			continue
		}
		toDelete = append(toDelete, e.Ref)
	}
	for _, e := range b.entries {
		if err, ok := res.failed[e.Ord]; ok {
			if isCanary && res.callErr != nil {
				err = r.deadTarget(b.target)
			}
			_ = r.Journal.Write(Event{Event: EvSendFailed, Batch: seq, ID: e.Msg.MessageID, Target: b.target, Error: err.Error()})
			r.emit(Result{Ord: e.Ord, Msg: e.Msg, Route: e.route, Outcome: OutcomeFailed, Err: err})
		}
		if err, ok := res.uncertain[e.Ord]; ok {
			_ = r.Journal.Write(Event{Event: EvUncertain, Batch: seq, ID: e.Msg.MessageID, Target: b.target, Error: err.Error()})
			r.emit(Result{Ord: e.Ord, Msg: e.Msg, Route: e.route, Outcome: OutcomeUncertain, Err: err})
		}
	}
	return &sentBatch{work: work, b: b, seq: seq, res: res, toDelete: toDelete, outcome: outcome, journalEnd: r.Journal.end()}, nil
}

// finishSent is the second half of send: the outcome records are made
// durable (at once when a later send record's sync already covered
// them), then what the target accepted is deleted from the source, and
// every result is journalled and reported.
func (r *Replayer) finishSent(sb *sentBatch) {
	b, seq, res, toDelete, outcome := sb.b, sb.seq, sb.res, sb.toDelete, sb.outcome
	work := sb.work
	if err := r.Journal.syncTo(sb.journalEnd); err != nil {
		r.setFatal(err)
	}
	delFailed := map[int]error{}
	lateDelete := false
	if len(toDelete) > 0 {
		delFailed = r.Hold.Delete(work, toDelete)
		// The deadline passed before the delete came back: it may have
		// reached SQS after another consumer received the message.
		lateDelete = r.Hold.Expiring(0)
	}
	r.stopOnRefusedDelete(delFailed)
	for _, e := range b.entries {
		id, ok := res.accepted[e.Ord]
		if !ok {
			continue
		}
		out := Result{Ord: e.Ord, Msg: e.Msg, Route: e.route, Outcome: outcome, NewID: id}
		if _, bad := delFailed[e.Ord]; !bad && lateDelete {
			err := fmt.Errorf("sent (new id %s) and deleted, but the run's hold ran out before the delete came back (the process was paused), so another consumer may have received it and replay it too: %w", id, ErrHoldLost)
			_ = r.Journal.Write(Event{Event: EvDeleted, Batch: seq, ID: e.Msg.MessageID})
			_ = r.Journal.Write(Event{Event: EvUncertain, Batch: seq, ID: e.Msg.MessageID, Target: b.target, Error: err.Error()})
			r.emit(Result{Ord: e.Ord, Msg: e.Msg, Route: e.route, Outcome: OutcomeUncertain, Err: err})
			continue
		}
		if err, bad := delFailed[e.Ord]; bad && (isGone(err) || r.Hold.State(e.Ord) == Lost) {
			// Its receipt handle was no longer valid: another consumer
			// received it after it was sent, and may replay it too.
			err = fmt.Errorf("sent (new id %s), but the run no longer held it when deleting it (%w), so another consumer may replay it too: %w", id, err, ErrHoldLost)
			_ = r.Journal.Write(Event{Event: EvUncertain, Batch: seq, ID: e.Msg.MessageID, Target: b.target, Error: err.Error()})
			r.emit(Result{Ord: e.Ord, Msg: e.Msg, Route: e.route, Outcome: OutcomeUncertain, Err: err})
			continue
		}
		if err, bad := delFailed[e.Ord]; bad {
			out.DeleteFailed = err
			_ = r.Journal.Write(Event{Event: EvDeleteFailed, Batch: seq, ID: e.Msg.MessageID, Error: err.Error()})
		} else {
			_ = r.Journal.Write(Event{Event: EvDeleted, Batch: seq, ID: e.Msg.MessageID})
		}
		r.emit(out)
	}
}

// ErrDeleteRefused stops a run whose deletes from the source are refused
// for lack of permission: every message sent after that would stay in the
// source too, in two places.
var ErrDeleteRefused = errors.New("the source queue refused to delete messages that were sent")

// stopOnRefusedDelete stops the run when a delete was refused for lack of
// permission (no retry fixes that).
func (r *Replayer) stopOnRefusedDelete(failed map[int]error) {
	for _, err := range failed {
		if awsconfig.IsAuthError(err) {
			r.setFatal(fmt.Errorf("%w: %w", ErrDeleteRefused, err))
			return
		}
	}
}

// ErrCanaryUncertain marks a target whose canary got no reply.
var ErrCanaryUncertain = errors.New("the canary message got no reply, so the target queue is not proven; nothing else was sent to it")

// sendResult is what one batch's SendMessageBatch calls came to: each
// entry is accepted (with the id the target gave it), failed (the target
// said no; it is safe to send again) or uncertain (no reply: it may be in
// the target already). callErr is set when a whole call was refused.
type sendResult struct {
	accepted  map[int]string
	failed    map[int]error
	uncertain map[int]error
	callErr   error
}

// SendOnce turns the SDK's own retries off for a send: the SDK retries a
// request whose reply was lost, which can deliver a message twice with
// nothing to say so. sendEntries retries only what the server refused; a
// caller that sends one message (the db writer's dead letters) passes it
// too, and reports a lost reply as a possible duplicate.
func SendOnce(o *sqs.Options) {
	if o.Retryer != nil {
		o.Retryer = retry.AddWithMaxAttempts(o.Retryer, 1)
	}
}

// OutcomeUnknown reports whether a failed call may still have taken
// effect: the request may have reached the server but its reply did not
// come back (a cut connection, a timeout, an unreadable reply, or a 5xx).
// A refusal (4xx) or a connection never made is a definite failure.
func OutcomeUnknown(err error) bool {
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) && re.Response != nil {
		s := re.HTTPStatusCode()
		return s < 400 || s >= 500
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return false
	}
	var se *smithyhttp.RequestSendError
	if errors.As(err, &se) {
		return true
	}
	var de *smithy.DeserializationError
	return errors.As(err, &de) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		checksumMismatch(err)
}

// checksumMismatch reports the SDK's own check of the MD5 digests in a
// reply (MD5OfMessageBody, MD5OfMessageAttributes) failing. The check runs
// on the reply, so the server has already accepted the request: for a send
// the messages may be in the target. The SDK's error types are unexported,
// so they are known by name and by the message it wraps them in.
func checksumMismatch(err error) bool {
	for e := range errorChain(err) {
		switch reflect.TypeOf(e).Name() {
		case "messageChecksumError", "batchMessageChecksumError":
			return true
		}
	}
	return strings.Contains(err.Error(), "message checksum validation failed")
}

// errorChain yields err and every error it wraps, depth first.
func errorChain(err error) func(func(error) bool) {
	return func(yield func(error) bool) {
		var walk func(error) bool
		walk = func(e error) bool {
			if e == nil {
				return true
			}
			if !yield(e) {
				return false
			}
			switch u := e.(type) {
			case interface{ Unwrap() error }:
				return walk(u.Unwrap())
			case interface{ Unwrap() []error }:
				for _, x := range u.Unwrap() {
					if !walk(x) {
						return false
					}
				}
			}
			return true
		}
		walk(err)
	}
}

// isThrottle reports a whole call the server refused because of its rate:
// nothing was sent, so it is retried.
func isThrottle(err error) bool {
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		return false
	}
	_, ok := retry.DefaultThrottleErrorCodes[ae.ErrorCode()]
	return ok
}

// sendEntries calls SendMessageBatch, retrying entries (and whole calls)
// that failed through no fault of the sender.
func sendEntries(ctx context.Context, api API, b *batch) sendResult {
	res := sendResult{accepted: map[int]string{}, failed: map[int]error{}, uncertain: map[int]error{}}
	pending := b.entries
	for attempt := 0; len(pending) > 0; attempt++ {
		// A retried entry's earlier failure no longer holds: this call
		// may deliver it, and its reply says what became of it.
		for _, e := range pending {
			delete(res.failed, e.Ord)
		}
		input := &sqs.SendMessageBatchInput{QueueUrl: aws.String(b.target)}
		byID := map[string]entry{}
		for i, e := range pending {
			id := strconv.Itoa(i)
			byID[id] = e
			input.Entries = append(input.Entries, sendEntry(id, b, e))
		}
		out, err := api.SendMessageBatch(ctx, input, SendOnce)
		if err != nil {
			wrapped := fmt.Errorf("send to %s: %w", b.target, err)
			if OutcomeUnknown(err) {
				for _, e := range pending {
					delete(res.failed, e.Ord)
					res.uncertain[e.Ord] = fmt.Errorf("no reply, the message may be in the target already: %w", wrapped)
				}
				return res
			}
			for _, e := range pending {
				res.failed[e.Ord] = wrapped
			}
			if attempt < 2 && isThrottle(err) {
				sleep(ctx, time.Duration(200<<attempt)*time.Millisecond)
				continue
			}
			res.callErr = err
			return res
		}
		for _, s := range out.Successful {
			if e, ok := byID[aws.ToString(s.Id)]; ok {
				res.accepted[e.Ord] = aws.ToString(s.MessageId)
				delete(res.failed, e.Ord)
			}
		}
		var retry []entry
		for _, f := range out.Failed {
			e, ok := byID[aws.ToString(f.Id)]
			if !ok {
				continue
			}
			ferr := fmt.Errorf("send to %s: %w", b.target, &EntryError{Code: aws.ToString(f.Code), Message: aws.ToString(f.Message), SenderFault: f.SenderFault})
			if _, both := res.accepted[e.Ord]; both {
				// Listed as both sent and failed: not confirmed, so it is
				// kept in the source, and may be in the target too.
				delete(res.accepted, e.Ord)
				res.uncertain[e.Ord] = fmt.Errorf("listed as both sent and failed: %w", ferr)
				continue
			}
			res.failed[e.Ord] = ferr
			if !f.SenderFault {
				retry = append(retry, e)
			}
		}
		// An entry in neither list was not confirmed: it stays in the
		// source, and may be in the target too.
		for id, e := range byID {
			_, ok := res.accepted[e.Ord]
			_, bad := res.failed[e.Ord]
			_, unsure := res.uncertain[e.Ord]
			if !ok && !bad && !unsure {
				res.uncertain[e.Ord] = fmt.Errorf("send to %s: entry %s missing from the SendMessageBatch response", b.target, id)
			}
		}
		if attempt == 2 || len(retry) == 0 {
			break
		}
		pending = retry
		sleep(ctx, time.Duration(200<<attempt)*time.Millisecond)
	}
	return res
}

func sendEntry(id string, b *batch, e entry) types.SendMessageBatchRequestEntry {
	m := e.Msg
	out := types.SendMessageBatchRequestEntry{
		Id:                aws.String(id),
		MessageBody:       aws.String(m.Body),
		MessageAttributes: m.sendAttributes(),
	}
	if e.route.Park && e.route.Delay > 0 {
		out.DelaySeconds = e.route.Delay
	}
	if IsFIFO(b.target) {
		group := m.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)]
		if group == "" {
			group = m.MessageID // no group to keep: each message its own, never one shared group
		}
		out.MessageGroupId = aws.String(group)
		out.MessageDeduplicationId = aws.String(DedupID(m.MessageID))
	}
	return out
}

// MoveAttributes are the system attributes a replay uses (sendEntry): a
// scan that only replays receives these, not all of them.
var MoveAttributes = []types.MessageSystemAttributeName{types.MessageSystemAttributeNameMessageGroupId}

// DedupID is the deterministic FIFO deduplication id of a replayed message:
// a re-run within the five-minute deduplication interval is a no-op.
func DedupID(messageID string) string {
	sum := sha256.Sum256([]byte("deadletter-replay:" + messageID))
	return hex.EncodeToString(sum[:20])
}

// deleteDuplicates removes from the source messages an earlier run already
// moved (the journal says so).
func (r *Replayer) deleteDuplicates(ctx context.Context, refs []Ref) {
	failed := r.Hold.Delete(context.WithoutCancel(ctx), refs)
	r.stopOnRefusedDelete(failed)
	for _, ref := range refs {
		res := Result{Ord: ref.Ord, Msg: ref.Msg, Outcome: OutcomeSkippedDuplicate}
		if err, bad := failed[ref.Ord]; bad {
			res.DeleteFailed = err
			_ = r.Journal.Write(Event{Event: EvDeleteFailed, ID: ref.Msg.MessageID, Error: err.Error()})
		} else {
			_ = r.Journal.Write(Event{Event: EvSkippedDuplicate, ID: ref.Msg.MessageID})
		}
		r.emit(res)
	}
}
