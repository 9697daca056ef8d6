package sqsmove

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/deadletter/deadletter/internal/awsconfig"
)

// State is where a held message stands.
type State uint8

const (
	Held     State = iota // received, invisible, not yet dealt with
	Done                  // deleted from the queue (it is safely elsewhere)
	Released              // made visible again
	// Extra: received after the scan was told to stop (another message of
	// the same receive). Never reported, sent or deleted; only released.
	Extra
	// Lost: the run no longer holds it: a renewal of its visibility was
	// refused as "receipt handle invalid / message not in flight" (another
	// consumer may have received it), or the hold's deadline passed (the
	// process was paused past its visibility timeout). It is never sent,
	// deleted or released afterwards: it is visible again, or someone
	// else's.
	Lost
)

// Hold receives every message of a queue and keeps it invisible until it
// is deleted or released. Received messages are spooled to a temporary
// file, so memory stays flat however deep the queue is: in memory there is
// only a seen-set of message ids and one state byte per message.
type Hold struct {
	api        API
	queueURL   string
	visibility time.Duration

	mu       sync.Mutex
	spool    *os.File
	w        *bufio.Writer
	written  int64  // bytes of spool flushed or buffered
	rec      []byte // the record being spooled (spool.go)
	uuidSeen map[[16]byte]int32
	strSeen  map[string]int32
	rehandle map[int32]string // newer receipt handles of messages received twice
	state    []State
	extras   int       // messages held as Extra
	done     int       // messages deleted (Done)
	extended time.Time // when visibility was last set for every held message
	// safeUntil is a time before which every held message is still
	// invisible to others: the start of the first receive, or of the last
	// renewal that succeeded for every message, plus the visibility
	// timeout. Past it the hold is over.
	safeUntil time.Time
	// Redelivered counts messages received more than once during the run
	// (a visibility timeout that ran out, or a retried receive).
	Redelivered  int
	beforeExtend func(until time.Time)
}

// BeforeExtend sets a function told the new deadline before the held
// messages' visibility is extended to it: the journal records it first,
// so that a resume knows how long they may stay invisible.
func (h *Hold) BeforeExtend(fn func(until time.Time)) {
	h.mu.Lock()
	h.beforeExtend = fn
	h.mu.Unlock()
}

// ReceiveOptions tune the scan.
type ReceiveOptions struct {
	Visibility    time.Duration // how long received messages stay invisible (extended while the run lasts)
	Wait          time.Duration // long-poll wait per receive (default 1 s)
	EmptyReceives int           // stop after this many empty long polls in a row (default 2)
	Max           int           // stop after this many new messages (0: all)
	Receivers     int           // parallel receive loops (default 1)
	// SystemAttributes are the system attributes (Message.Attributes) to
	// receive; nil: all of them. A caller that only moves messages asks
	// for the few it uses: each one costs the server and the client work
	// on every message.
	SystemAttributes []types.MessageSystemAttributeName
	// OnEmpty, when set, is called after each receive that brought
	// nothing new while the scan goes on (never concurrently with fn nor
	// with itself): the queue may be drained, and the scan ends after
	// EmptyReceives of them. A streamed replay sends its partial batches
	// then, during the last long poll, instead of after it.
	OnEmpty func()
}

// NewHold prepares a hold on a queue; Close frees the spool. With a nil
// api the hold has no source queue (messages loaded from a file): deleting
// only marks a message done, and releasing does nothing.
//
// The spool holds message bodies. It is unlinked as soon as it is open, so
// it never outlives the process, even one killed with SIGKILL.
func NewHold(api API, queueURL string, visibility time.Duration) (*Hold, error) {
	f, err := os.CreateTemp("", "deadletter-spool-*")
	if err != nil {
		return nil, fmt.Errorf("create the spool file: %w", err)
	}
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		return nil, fmt.Errorf("unlink the spool file: %w", err)
	}
	return &Hold{
		api: api, queueURL: queueURL, visibility: visibility,
		spool: f, w: bufio.NewWriterSize(f, 256<<10),
		uuidSeen: map[[16]byte]int32{}, strSeen: map[string]int32{}, rehandle: map[int32]string{},
	}, nil
}

// Close frees the spool file (already unlinked). Call Release first.
func (h *Hold) Close() error {
	return h.spool.Close()
}

// Deadline is a time by which every message held so far is visible again
// unless the hold is extended: each was received or extended before now.
func (h *Hold) Deadline() string {
	return time.Now().Add(h.visibility).UTC().Format(time.RFC3339Nano)
}

// Len is the number of distinct messages held so far.
func (h *Hold) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.state)
}

// Receive long-polls the queue and calls fn once for each distinct message
// (in receive order, never concurrently), until the queue looks empty, Max
// new messages were seen, fn returns stop, or ctx ends. A message received
// again is not passed to fn a second time; its newest receipt handle is
// kept.
func (h *Hold) Receive(ctx context.Context, opt ReceiveOptions, fn func(ord int, m *Message) (stop bool)) error {
	if opt.Wait <= 0 {
		opt.Wait = time.Second
	}
	if opt.EmptyReceives <= 0 {
		opt.EmptyReceives = 2
	}
	if opt.Receivers <= 0 {
		opt.Receivers = 1
	}
	if opt.SystemAttributes == nil {
		opt.SystemAttributes = []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll}
	}
	h.mu.Lock()
	if h.extended.IsZero() {
		h.extended = time.Now()
		h.safeUntil = h.extended.Add(h.visibility)
	}
	h.mu.Unlock()

	// A receive in flight is never cancelled: its messages are already
	// invisible on the server, and a response thrown away would hide them
	// for the whole visibility timeout. Stopping (Max reached, fn said
	// stop, ctx ended) only prevents the next receive.
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex // serialises fn and guards the fields below
		stopped  bool
		firstErr error
		newCount int
		// The end of the scan: EmptyReceives receives in a row, across the
		// receivers, that brought nothing new (concurrent long polls that
		// both come back empty are as good a sign that the scan went round
		// the queue as two in a row from one receiver, in half the time).
		// Once one came back empty, a receiver starts another poll only
		// when the polls in flight are too few to end the scan: a poll
		// started then would outlast them.
		empty    int
		inFlight int
	)
	turn := sync.NewCond(&mu)
	defer context.AfterFunc(ctx, func() { mu.Lock(); turn.Broadcast(); mu.Unlock() })()
	// next waits for a turn to receive; false: the scan is over.
	next := func() bool {
		mu.Lock()
		defer mu.Unlock()
		for {
			if stopped || ctx.Err() != nil || empty >= opt.EmptyReceives {
				return false
			}
			if empty == 0 || inFlight < opt.EmptyReceives-empty {
				inFlight++
				return true
			}
			turn.Wait()
		}
	}
	call := context.WithoutCancel(ctx)
	for range opt.Receivers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				if !next() {
					return
				}
				rctx, cancel := context.WithTimeout(call, opt.Wait+30*time.Second)
				out, err := h.api.ReceiveMessage(rctx, &sqs.ReceiveMessageInput{
					QueueUrl:                    aws.String(h.queueURL),
					MaxNumberOfMessages:         10,
					VisibilityTimeout:           int32(h.visibility / time.Second),
					WaitTimeSeconds:             int32((opt.Wait + time.Second - 1) / time.Second),
					MessageAttributeNames:       []string{"All"},
					MessageSystemAttributeNames: opt.SystemAttributes,
				})
				cancel()
				if err != nil {
					limit := h.inFlightLimit(err)
					mu.Lock()
					switch {
					case firstErr != nil || stopped:
					case limit != nil:
						firstErr = limit // not a failure of the queue: the scan got this far
					default:
						firstErr = fmt.Errorf("receive from %s: %w", h.queueURL, err)
					}
					stopped = true
					inFlight--
					turn.Broadcast()
					mu.Unlock()
					return
				}
				// A receive that brings nothing new counts as empty too: only
				// messages seen before means the scan has gone round the queue.
				fresh := 0
				mu.Lock()
				for _, raw := range out.Messages {
					m := fromSQS(raw)
					st := Held
					if stopped {
						st = Extra
					}
					ord, isNew, err := h.add(&m, st)
					if err != nil {
						if firstErr == nil {
							firstErr = err
						}
						stopped = true
						continue // keep holding the rest so that they are released
					}
					if !isNew {
						continue
					}
					fresh++
					if st == Extra {
						continue // held (and released later), but not reported
					}
					newCount++
					if fn(ord, &m) || (opt.Max > 0 && newCount >= opt.Max) {
						stopped = true
					}
				}
				inFlight--
				if fresh == 0 {
					empty++
					if opt.OnEmpty != nil && !stopped && ctx.Err() == nil {
						opt.OnEmpty()
					}
				} else {
					empty = 0
				}
				turn.Broadcast()
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	return nil
}

// Load holds the messages of an export file (one JSON message per line,
// as `pushdlq export` writes them) instead of receiving them. A line that
// is not a message is an error naming the line; a message id seen before
// is held once.
func (h *Hold) Load(r io.Reader, name string, fn func(ord int, m *Message) (stop bool)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	line := 0
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if line == 1 {
			// A byte-order mark, as some editors save UTF-8: not part of
			// the first message.
			b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
		}
		if len(strings.TrimSpace(string(b))) == 0 {
			continue
		}
		var m Message
		if err := json.Unmarshal(b, &m); err != nil {
			return fmt.Errorf("%s line %d: not a message: %w", name, line, err)
		}
		if m.MessageID == "" {
			return fmt.Errorf("%s line %d: no message_id", name, line)
		}
		m.ReceiptHandle = ""
		ord, fresh, err := h.add(&m, Held)
		if err != nil {
			return err
		}
		if fresh && fn(ord, &m) {
			return nil
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read %s: %w", name, err)
	}
	return nil
}

// add records a received message: a new one is spooled, a known one only
// gets its receipt handle refreshed.
func (h *Hold) add(m *Message, st State) (ord int, fresh bool, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	uuid, isUUID := parseUUID(m.MessageID)
	var known int32
	var seen bool
	if isUUID {
		known, seen = h.uuidSeen[uuid]
	} else {
		known, seen = h.strSeen[m.MessageID]
	}
	if seen {
		h.Redelivered++
		if s := h.state[known]; s == Held || s == Extra {
			h.rehandle[known] = m.ReceiptHandle
		}
		return int(known), false, nil
	}
	o := int32(len(h.state))
	h.rec = appendSpoolRecord(h.rec[:0], o, m)
	b := h.rec
	if _, err := h.w.Write(b); err != nil {
		return 0, false, fmt.Errorf("spool message %s: %w", m.MessageID, err)
	}
	h.written += int64(len(b))
	h.state = append(h.state, st)
	if st == Extra {
		h.extras++
	}
	if isUUID {
		h.uuidSeen[uuid] = o
	} else {
		h.strSeen[m.MessageID] = o
	}
	return int(o), true, nil
}

// Each streams every held message from the spool in receive order, with
// its newest receipt handle and its state at the time it is read.
func (h *Hold) Each(fn func(ord int, st State, m *Message) error) error {
	h.mu.Lock()
	if err := h.w.Flush(); err != nil {
		h.mu.Unlock()
		return fmt.Errorf("flush the spool: %w", err)
	}
	size := h.written
	h.mu.Unlock()
	sr := spoolReader{r: bufio.NewReaderSize(io.NewSectionReader(h.spool, 0, size), 256<<10)}
	for {
		ord, m, err := sr.next()
		if errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("read the spool: %w", err)
		}
		h.mu.Lock()
		if int(ord) >= len(h.state) {
			h.mu.Unlock()
			return fmt.Errorf("read the spool: %w", errSpoolRecord)
		}
		st := h.state[ord]
		if hnd, ok := h.rehandle[ord]; ok {
			m.ReceiptHandle = hnd
		}
		h.mu.Unlock()
		if err := fn(int(ord), st, m); err != nil {
			return err
		}
	}
}

// extraCount is how many messages were held as Extra.
func (h *Hold) extraCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.extras
}

// Outstanding is the number of distinct messages held so far that were
// not deleted: they are invisible in the queue on this run's account
// (or Lost, or already released).
func (h *Hold) Outstanding() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.state) - h.done
}

// anyHeld reports whether a message is still Held or Extra: a walk over
// the spool for them is needed.
func (h *Hold) anyHeld() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range h.state {
		if s == Held || s == Extra {
			return true
		}
	}
	return false
}

// State reports a message's state.
func (h *Hold) State(ord int) State {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.state[ord]
}

func (h *Hold) setState(ord int, st State) {
	h.mu.Lock()
	if st == Done && h.state[ord] != Done {
		h.done++
	}
	h.state[ord] = st
	delete(h.rehandle, int32(ord))
	h.mu.Unlock()
}

// handle is a message's newest receipt handle.
func (h *Hold) handle(ord int, m *Message) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if hnd, ok := h.rehandle[int32(ord)]; ok {
		return hnd
	}
	return m.ReceiptHandle
}

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

// parseUUID reads the usual SQS message id form into 16 bytes, which keeps
// the seen-set small.
func parseUUID(s string) ([16]byte, bool) {
	var u [16]byte
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return u, false
	}
	hexs := s[0:8] + s[9:13] + s[14:18] + s[19:23] + s[24:36]
	if _, err := hex.Decode(u[:], []byte(hexs)); err != nil {
		return u, false
	}
	// Only the canonical lower-case form maps one to one onto its bytes.
	if strings.ToLower(s) != s {
		return u, false
	}
	return u, true
}
