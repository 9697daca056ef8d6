package pushdlqcmd

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/deadletter/deadletter/internal/cli/cmdutil"
	"github.com/deadletter/deadletter/internal/cli/output"
	"github.com/deadletter/deadletter/internal/sqsmove"
	"github.com/deadletter/deadletter/internal/workflow/dlqsession"
)

// addQueueFlags registers the flags of every command that reads the DLQ.
func addQueueFlags(cmd *cobra.Command, q *dlqsession.QueueOptions, required bool) {
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

func validateQueue(q dlqsession.QueueOptions) error {
	if q.Visibility < time.Second || q.Visibility > 12*time.Hour {
		return cmdutil.UsageErrorf("--visibility-timeout %s: want between 1s and 12h (the SQS limits)", q.Visibility)
	}
	if q.Wait < time.Second || q.Wait > 20*time.Second {
		return cmdutil.UsageErrorf("--wait %s: want between 1s and 20s", q.Wait)
	}
	return nil
}

// openSession opens the DLQ for inspect, export and triage (replay's run
// opens its own): warnings and progress on stderr, a refused queue a usage
// error.
func openSession(ctx context.Context, f *Factory, q dlqsession.QueueOptions) (*dlqsession.Session, error) {
	api, where, err := f.SQS(ctx)
	if err != nil {
		return nil, err
	}
	s, err := dlqsession.OpenSession(ctx, api, where, q, stderrOut(f))
	return s, usageExit(err)
}

// inFlightLimitNote says how far a scan got before SQS's in-flight limit
// stopped it, of about how many messages, and what the run does about the
// rest.
func inFlightLimitNote(limit *sqsmove.InFlightLimitError, about int64, rest string) string {
	return fmt.Sprintf("pushdlq: read the first %s of about %d: SQS's in-flight limit (OverLimit) stopped the scan; %s",
		output.Plural(limit.Held, "message"), about, rest)
}

// stderrOut is where the replay workflow and a DLQ session speak: stderr,
// with progress lines on a terminal.
func stderrOut(f *Factory) dlqsession.Out {
	return dlqsession.Out{
		Logf: func(format string, args ...any) { fmt.Fprintf(f.IO.ErrOut, format+"\n", args...) },
		NewProgress: func() dlqsession.Progress {
			return cmdutil.NewProgress(f.IO.ErrOut, f.IO.ShowProgress())
		},
	}
}

// usageExit makes a *dlqsession.UsageError a usage error (exit 2).
func usageExit(err error) error {
	var usage *dlqsession.UsageError
	if errors.As(err, &usage) {
		return &cmdutil.ExitError{Code: cmdutil.ExitUsage, Err: err}
	}
	return err
}
