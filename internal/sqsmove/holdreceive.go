package sqsmove

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// Filling a hold: receiving from the queue (Receive) or loading an export
// file (Load).

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
		stopped  bool       // no new receive, and what comes in is Extra
		limited  bool       // no new receive: SQS's in-flight limit refused one
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
			if stopped || limited || ctx.Err() != nil || empty >= opt.EmptyReceives {
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
					case limit != nil:
						// Not a failure of the queue: the scan got this
						// far. The receives still in flight were answered
						// before this refusal, or it would not have come:
						// their messages are read as usual, not set aside
						// as Extra (under load the refusal, which has no
						// messages to carry, can be handled first, and a
						// scan would then stop having read nothing). A
						// second refusal is the same limit.
						if firstErr == nil && !stopped {
							firstErr = limit
						}
						limited = true
					case firstErr != nil || stopped:
						stopped = true
					default:
						firstErr = fmt.Errorf("receive from %s: %w", h.queueURL, err)
						stopped = true
					}
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
	if le, ok := firstErr.(*InFlightLimitError); ok {
		le.Held = h.Len() // with what the receives in flight brought
	}
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
