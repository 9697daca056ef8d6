// Package dlqsession is the push DLQ opened for reading: the queue
// resolved, described and checked (a standard queue, without a redrive
// policy of its own unless allowed), and the messages received from it
// held invisible, their visibility renewed, until they are deleted or
// released. inspect, triage, trace and export read the DLQ through a
// Session (ScanAndRelease for the read-only verbs); pushreplay's run scans
// through one too. Receiving and holding are internal/sqsmove's.
package dlqsession

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/sqsmove"
)

// QueueOptions say which DLQ a session reads, and how.
type QueueOptions struct {
	DLQ string // its URL or its name
	// Visibility is how long received messages stay invisible; it is
	// renewed while the session lasts, so a killed run frees them this soon.
	Visibility time.Duration
	Wait       time.Duration // long-poll wait per receive
	// AllowRedrive reads a DLQ that has its own redrive policy, although
	// each receive counts toward its maxReceiveCount.
	AllowRedrive bool
}

// Progress is a status line (the CLI's cmdutil.Progress, drawn on a
// terminal only).
type Progress interface {
	Update(format string, args ...any)
	Clear()
}

// Out is where a session and a run speak to the operator (the CLI's
// stderr). Either may be nil: nothing is said.
type Out struct {
	// Logf writes one line (the line break is the caller's).
	Logf func(format string, args ...any)
	// NewProgress returns a status line of its own.
	NewProgress func() Progress
}

// Log writes one line through Logf, if there is one.
func (o Out) Log(format string, args ...any) {
	if o.Logf != nil {
		o.Logf(format, args...)
	}
}

// StartProgress returns a status line of its own (one that draws nothing
// without NewProgress).
func (o Out) StartProgress() Progress {
	if o.NewProgress == nil {
		return noProgress{}
	}
	return o.NewProgress()
}

type noProgress struct{}

func (noProgress) Update(string, ...any) {}
func (noProgress) Clear()                {}

// Messages counts messages in words: "1 message", "2 messages".
func Messages(n int) string {
	if n == 1 {
		return "1 message"
	}
	return strconv.Itoa(n) + " messages"
}

// Session is an open DLQ with the messages received from it held
// invisible until they are deleted or released: what replay, inspect,
// export and triage read the DLQ through.
type Session struct {
	API   sqsmove.API
	Where string // profile, region, endpoint
	Queue sqsmove.Queue
	Hold  *sqsmove.Hold
	// SystemAttributes: the system attributes a scan receives (nil: all,
	// as inspect and export keep them).
	SystemAttributes []types.MessageSystemAttributeName
	// OnEmpty: called after a receive of the scan that brought nothing
	// new (sqsmove.ReceiveOptions.OnEmpty).
	OnEmpty func()

	opts      QueueOptions
	out       Out
	stopAlive context.CancelFunc
	aliveDone chan struct{}
}

// OpenSession resolves and describes the DLQ and prepares to hold its
// messages, renewing their visibility until Close. Nothing is received
// yet. A FIFO queue, or one with its own redrive policy (unless
// q.AllowRedrive), is refused with a *UsageError.
func OpenSession(ctx context.Context, api sqsmove.API, where string, q QueueOptions, out Out) (*Session, error) {
	u, err := sqsmove.ResolveURL(ctx, api, q.DLQ)
	if err != nil {
		return nil, err
	}
	queue, err := sqsmove.Describe(ctx, api, u)
	if err != nil {
		return nil, err
	}
	if queue.FIFO {
		return nil, refusef("%s is a FIFO queue; the push DLQ is a standard queue, and pushdlq reads standard queues only: "+
			"it holds every message it receives, and SQS hands out nothing more of a FIFO message group while one of its messages is held, "+
			"so a scan would stop at the first message of each group and report the rest as not there", sqsmove.Name(u))
	}
	if queue.RedrivePolicy != "" && !q.AllowRedrive {
		return nil, refusef("%s has its own redrive policy (maxReceiveCount %s, to %s): every receive by pushdlq counts toward it, "+
			"so reading the queue (inspect and export too) moves each message whose receive count reaches %s out of it, to that queue, where this tool does not see it; "+
			"remove the policy, or pass --allow-redrive to read it anyway",
			sqsmove.Name(u), redriveMax(queue.RedrivePolicy), redriveTarget(queue.RedrivePolicy), redriveMax(queue.RedrivePolicy))
	}
	hold, err := sqsmove.NewHold(api, u, q.Visibility)
	if err != nil {
		return nil, err
	}
	s := &Session{API: api, Where: where, Queue: queue, Hold: hold, opts: q, out: out, aliveDone: make(chan struct{})}
	aliveCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.stopAlive = cancel
	go func() {
		defer close(s.aliveDone)
		hold.KeepAlive(aliveCtx, func(err error) {
			out.Log("warning: could not extend the visibility of held messages: %v", err)
		})
	}()
	return s, nil
}

// Banner names the queue and the identity, and says what verb's reading
// does to the messages.
func (s *Session) Banner(verb string) {
	acct := s.Queue.Account()
	if acct == "" {
		acct = "unknown"
	}
	// The identity on a line of its own: with the queue's name it ran past
	// 80 columns.
	where := s.Where
	if i := strings.Index(where, " endpoint="); i > 0 && len(where)+2 > 80 {
		// The endpoint on a line of its own: with a local endpoint and
		// the variable that set it, the identity ran past 80 columns.
		where = where[:i] + "\n  " + where[i+1:]
	}
	s.out.Log("queue %s (account %s)\n  %s", sqsmove.Name(s.Queue.URL), acct, where)
	if s.Queue.RedrivePolicy != "" {
		s.out.Log("warning: %s has its own redrive policy (maxReceiveCount %s, to %s): receiving its messages may move them there (--allow-redrive)",
			sqsmove.Name(s.Queue.URL), redriveMax(s.Queue.RedrivePolicy), redriveTarget(s.Queue.RedrivePolicy))
	}
	// Three lines: two ran past 80 columns by a word or two.
	s.out.Log("note: %s receives each message, which raises its receive count\n"+
		"      (ApproximateReceiveCount); messages are held invisible meanwhile\n"+
		"      and made visible again at the end", verb)
}

// redriveMax and redriveTarget read a RedrivePolicy attribute (the count
// may be a JSON number or a string).
func redriveMax(policy string) string { return gjson.Get(policy, "maxReceiveCount").String() }

func redriveTarget(policy string) string { return gjson.Get(policy, "deadLetterTargetArn").Str }

// Scan receives messages until the queue is exhausted, max new messages
// were seen or fn says stop, with a progress line.
func (s *Session) Scan(ctx context.Context, max int, fn func(ord int, m *sqsmove.Message) bool) error {
	return s.ScanWith(ctx, max, 2, fn)
}

// ScanWith is Scan with receivers receive loops in parallel (Scan has
// two).
func (s *Session) ScanWith(ctx context.Context, max, receivers int, fn func(ord int, m *sqsmove.Message) bool) error {
	progress := s.out.StartProgress()
	defer progress.Clear()
	// Formatted once, not for every message.
	name, total := sqsmove.Name(s.Queue.URL), Messages(int(s.Queue.Visible))
	n := 0
	return s.Hold.Receive(ctx, sqsmove.ReceiveOptions{Wait: s.opts.Wait, Max: max, Receivers: receivers, SystemAttributes: s.SystemAttributes, OnEmpty: s.OnEmpty}, func(ord int, m *sqsmove.Message) bool {
		n++
		progress.Update("scanning %s: %d of ~%s", name, n, total)
		return fn(ord, m)
	})
}

// Close releases every message still held and removes the spool. Call it
// even when the run was interrupted.
func (s *Session) Close() (released int, failed int) {
	s.stopAlive()
	<-s.aliveDone
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	released, failures := s.Hold.Release(ctx)
	if len(failures) > 0 {
		var first error
		for _, err := range failures {
			first = err
			break
		}
		s.out.Log("warning: %s could not be made visible again (%v); they reappear when their visibility timeout (%s) runs out",
			Messages(len(failures)), first, s.opts.Visibility)
	}
	s.Hold.Close()
	return released, len(failures)
}

// UsageError is a run refused for what it was given, before anything was
// sent: a FIFO DLQ or one with its own redrive policy (OpenSession), and
// pushreplay's refusals: a --resume file that is not this replay's
// journal, a journal another run holds, a plan that would send to the DLQ
// itself. The CLI's exit 2.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

func refusef(format string, args ...any) error {
	return &UsageError{Err: fmt.Errorf(format, args...)}
}

// ScanAndRelease is the read-only scan of inspect, triage and trace: at
// most max messages (0: all) handed to fn, then every one released
// (Close). A scan that SQS's in-flight limit stopped is not an error:
// limit says how far it got (nil when nothing stopped it), for the
// caller's note.
func (s *Session) ScanAndRelease(ctx context.Context, max int, fn func(m *sqsmove.Message)) (limit *sqsmove.InFlightLimitError, err error) {
	err = s.Scan(ctx, max, func(_ int, m *sqsmove.Message) bool {
		fn(m)
		return false
	})
	s.Close()
	if errors.As(err, &limit) {
		err = nil // a report of what was read, which says so
	}
	if err == nil {
		err = ctx.Err()
	}
	return limit, err
}
