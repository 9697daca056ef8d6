package pushdlqcmd

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/spf13/cobra"
	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/cli/cmdutil"
	"github.com/deadletter/deadletter/internal/cli/output"
	"github.com/deadletter/deadletter/internal/sqsmove"
)

// queueFlags are the flags of every command that reads the DLQ.
type queueFlags struct {
	DLQ          string
	Visibility   time.Duration
	Wait         time.Duration
	AllowRedrive bool
}

func (q *queueFlags) register(cmd *cobra.Command, required bool) {
	fl := cmd.Flags()
	usage := "the dead-letter queue: its URL or its name"
	if !required {
		usage += " (required unless --from-env or --from-file)"
	}
	fl.StringVar(&q.DLQ, "dlq", "", usage)
	fl.DurationVar(&q.Visibility, "visibility-timeout", 2*time.Minute,
		"how long received messages stay invisible; renewed while the run lasts, so a killed run frees them this soon")
	fl.BoolVar(&q.AllowRedrive, "allow-redrive", false,
		"read a DLQ that has its own redrive policy, although each receive counts toward its maxReceiveCount and can move messages to its own DLQ")
	fl.DurationVar(&q.Wait, "wait", time.Second, "long-poll wait per receive; the scan ends after two receives bring nothing new")
	_ = fl.MarkHidden("wait")
}

func (q *queueFlags) validate() error {
	if q.Visibility < time.Second || q.Visibility > 12*time.Hour {
		return cmdutil.UsageErrorf("--visibility-timeout %s: want between 1s and 12h (the SQS limits)", q.Visibility)
	}
	if q.Wait < time.Second || q.Wait > 20*time.Second {
		return cmdutil.UsageErrorf("--wait %s: want between 1s and 20s", q.Wait)
	}
	return nil
}

// session is an open DLQ with the messages received from it held
// invisible until they are deleted or released.
type session struct {
	f         *Factory
	api       sqsmove.API
	where     string // profile, region, endpoint
	queue     sqsmove.Queue
	hold      *sqsmove.Hold
	flags     queueFlags
	stopAlive context.CancelFunc
	// systemAttributes: the system attributes a scan receives (nil: all,
	// as inspect and export keep them).
	systemAttributes []types.MessageSystemAttributeName
	// onEmpty: called after a receive of the scan that brought nothing
	// new (sqsmove.ReceiveOptions.OnEmpty).
	onEmpty   func()
	aliveDone chan struct{}
}

// openSession resolves and describes the DLQ and prepares to hold its
// messages. Nothing is received yet.
func openSession(ctx context.Context, f *Factory, q queueFlags) (*session, error) {
	api, where, err := f.SQS(ctx)
	if err != nil {
		return nil, err
	}
	u, err := sqsmove.ResolveURL(ctx, api, q.DLQ)
	if err != nil {
		return nil, err
	}
	queue, err := sqsmove.Describe(ctx, api, u)
	if err != nil {
		return nil, err
	}
	if queue.FIFO {
		return nil, cmdutil.UsageErrorf("%s is a FIFO queue; the push DLQ is a standard queue, and pushdlq reads standard queues only: "+
			"it holds every message it receives, and SQS hands out nothing more of a FIFO message group while one of its messages is held, "+
			"so a scan would stop at the first message of each group and report the rest as not there", sqsmove.Name(u))
	}
	if queue.RedrivePolicy != "" && !q.AllowRedrive {
		return nil, cmdutil.UsageErrorf("%s has its own redrive policy (maxReceiveCount %s, to %s): every receive by pushdlq counts toward it, "+
			"so reading the queue (inspect and export too) moves each message whose receive count reaches %s out of it, to that queue, where this tool does not see it; "+
			"remove the policy, or pass --allow-redrive to read it anyway",
			sqsmove.Name(u), redriveMax(queue.RedrivePolicy), redriveTarget(queue.RedrivePolicy), redriveMax(queue.RedrivePolicy))
	}
	hold, err := sqsmove.NewHold(api, u, q.Visibility)
	if err != nil {
		return nil, err
	}
	s := &session{f: f, api: api, where: where, queue: queue, hold: hold, flags: q, aliveDone: make(chan struct{})}
	aliveCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.stopAlive = cancel
	go func() {
		defer close(s.aliveDone)
		hold.KeepAlive(aliveCtx, func(err error) {
			fmt.Fprintf(f.IO.ErrOut, "warning: could not extend the visibility of held messages: %v\n", err)
		})
	}()
	return s, nil
}

// banner names the queue and the identity on stderr.
func (s *session) banner() {
	acct := s.queue.Account()
	if acct == "" {
		acct = "unknown"
	}
	fmt.Fprintf(s.f.IO.ErrOut, "queue %s (account %s, %s)\n", sqsmove.Name(s.queue.URL), acct, s.where)
	if s.queue.RedrivePolicy != "" {
		fmt.Fprintf(s.f.IO.ErrOut, "warning: %s has its own redrive policy (maxReceiveCount %s, to %s): receiving its messages may move them there (--allow-redrive)\n",
			sqsmove.Name(s.queue.URL), redriveMax(s.queue.RedrivePolicy), redriveTarget(s.queue.RedrivePolicy))
	}
}

// redriveMax and redriveTarget read a RedrivePolicy attribute (the count
// may be a JSON number or a string).
func redriveMax(policy string) string { return gjson.Get(policy, "maxReceiveCount").String() }

func redriveTarget(policy string) string { return gjson.Get(policy, "deadLetterTargetArn").Str }

// scan receives messages until the queue is exhausted, max new messages
// were seen or fn says stop; progress goes to stderr on a terminal.
func (s *session) scan(ctx context.Context, max int, fn func(ord int, m *sqsmove.Message) bool) error {
	return s.scanWith(ctx, max, 2, fn)
}

// scanWith is scan with receivers receive loops in parallel.
func (s *session) scanWith(ctx context.Context, max, receivers int, fn func(ord int, m *sqsmove.Message) bool) error {
	progress := cmdutil.NewProgress(s.f.IO.ErrOut, s.f.IO.ShowProgress())
	defer progress.Clear()
	// Formatted once, not for every message.
	name, total := sqsmove.Name(s.queue.URL), output.Plural(int(s.queue.Visible), "message")
	n := 0
	return s.hold.Receive(ctx, sqsmove.ReceiveOptions{Wait: s.flags.Wait, Max: max, Receivers: receivers, SystemAttributes: s.systemAttributes, OnEmpty: s.onEmpty}, func(ord int, m *sqsmove.Message) bool {
		n++
		progress.Update("scanning %s: %d of ~%s", name, n, total)
		return fn(ord, m)
	})
}

// close releases every message still held and removes the spool. It runs
// even when the command was interrupted.
func (s *session) close() (released int, failed int) {
	s.stopAlive()
	<-s.aliveDone
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	released, failures := s.hold.Release(ctx)
	if len(failures) > 0 {
		var first error
		for _, err := range failures {
			first = err
			break
		}
		fmt.Fprintf(s.f.IO.ErrOut, "warning: %s could not be made visible again (%v); they reappear when their visibility timeout (%s) runs out\n",
			output.Plural(len(failures), "message"), first, s.flags.Visibility)
	}
	s.hold.Close()
	return released, len(failures)
}

// inFlightLimitNote says how far a scan got before SQS's in-flight limit
// stopped it, of about how many messages, and what the run does about the
// rest.
func inFlightLimitNote(limit *sqsmove.InFlightLimitError, about int64, rest string) string {
	return fmt.Sprintf("pushdlq: read the first %s of about %d: SQS's in-flight limit (OverLimit) stopped the scan; %s",
		output.Plural(limit.Held, "message"), about, rest)
}

// receiveNote says what reading does to the messages.
func receiveNote(verb string) string {
	return fmt.Sprintf("note: %s receives each message, which raises its receive count (ApproximateReceiveCount);\n"+
		"      messages are held invisible meanwhile and made visible again at the end", verb)
}
