// Package pushdlq is the push-dlq processor: the Lambda function behind an
// SQS event source mapping on the push DLQ that replays the slice of failed
// push commands its environment selects and parks the rest. Its decision is
// the one `pushdlq replay` makes (internal/workflow/pushreplay), from the
// same environment (pushpolicy.LoadConfig).
package pushdlq

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/aws/aws-lambda-go/events"

	"github.com/deadletter/deadletter/internal/awsconfig"
	"github.com/deadletter/deadletter/internal/processor/jsonlog"
	"github.com/deadletter/deadletter/internal/pushpolicy"
	"github.com/deadletter/deadletter/internal/sqsmove"
	"github.com/deadletter/deadletter/internal/workflow/pushreplay"
)

// Handler handles the SQS events of one function instance.
type Handler struct {
	Config pushpolicy.Config
	API    sqsmove.API
	// Log gets one JSON line per record and a summary line per
	// invocation (stdout in Lambda, where it goes to CloudWatch Logs).
	Log io.Writer
}

// New builds the handler at cold start: the configuration from the
// environment (the function `pushdlq replay --from-env` uses) and an SQS
// client as the CLI builds it (AWS_ENDPOINT_URL_SQS and AWS_ENDPOINT_URL
// are honoured). A bad variable is an error that names it and its value.
func New(ctx context.Context, getenv func(string) string, log io.Writer) (*Handler, error) {
	cfg, err := pushpolicy.LoadConfig(getenv)
	if err != nil {
		return nil, err // names the variable and its value
	}
	// The function sends to these as they are (pushdlq replay resolves a
	// queue name; the processor does not): a name or a typo would fail
	// every park, or every replay, and come back forever.
	for _, v := range []struct{ name, value, want string }{
		{pushpolicy.EnvDLQURL, cfg.DLQURL, "https://sqs.REGION.amazonaws.com/ACCOUNT/NAME"},
		{pushpolicy.EnvBaseURL, cfg.BaseURL, "https://sqs.REGION.amazonaws.com/ACCOUNT/PREFIX, to which P<priority> is appended"},
	} {
		if err := sqsmove.CheckQueueURL(v.value); err != nil {
			return nil, &pushpolicy.EnvError{Name: v.name, Value: v.value, Err: fmt.Errorf("%w (want %s)", err, v.want)}
		}
	}
	if sqsmove.IsFIFO(cfg.DLQURL) {
		// Every park would be refused (a FIFO queue takes no per-message
		// DelaySeconds) and come back as a batch item failure, forever:
		// each malformed or ineligible message a poison pill.
		return nil, &pushpolicy.EnvError{Name: pushpolicy.EnvDLQURL, Value: cfg.DLQURL,
			Err: errors.New("is a FIFO queue; the push DLQ must be a standard queue: parking re-sends a message with DelaySeconds 900, which a FIFO queue refuses")}
	}
	awsCfg, err := awsconfig.Load(ctx, awsconfig.Settings{})
	if err != nil {
		return nil, err
	}
	h := &Handler{Config: cfg, API: awsconfig.SQS(awsCfg, awsconfig.Settings{}), Log: log}
	if err := cfg.Policy.Validate(false); err != nil {
		// `pushdlq replay` refuses this without --allow-wide-window; the
		// processor, a drop-in replacement, runs it but says so.
		h.write(map[string]string{"type": "warning", "warning": err.Error()})
	}
	return h, nil
}

// RecordLog is the log line of one record.
type RecordLog struct {
	Type       string `json:"type"` // "record"
	MessageID  string `json:"message_id"`
	Decision   string `json:"decision"` // "replay" or "park"
	Eligible   bool   `json:"eligible"`
	Reason     string `json:"reason,omitempty"` // why not eligible (pushpolicy.Reason)
	ReasonText string `json:"reason_text,omitempty"`
	Detail     string `json:"detail,omitempty"` // the offending value of a malformed body
	Target     string `json:"target"`           // the priority queue, or the DLQ when parked
	Outcome    string `json:"outcome"`          // sent, parked, failed, uncertain
	NewID      string `json:"new_message_id,omitempty"`
	Error      string `json:"error,omitempty"`
	// Retry: the record is in batchItemFailures; PossibleDuplicate: its
	// send got no reply, so it may be in Target already.
	Retry             bool `json:"retry"`
	PossibleDuplicate bool `json:"possible_duplicate,omitempty"`
	// DuplicateInEvent: an earlier record of the event was the same
	// message (same id); it was not sent again, and this line repeats that
	// record's outcome.
	DuplicateInEvent bool `json:"duplicate_in_event,omitempty"`
}

// SummaryLog is the log line of one invocation.
type SummaryLog struct {
	Type               string         `json:"type"` // "summary"
	Records            int            `json:"records"`
	Eligible           int            `json:"eligible"`
	Sent               int            `json:"sent"`
	Parked             int            `json:"parked"`
	Failed             int            `json:"failed"`
	Uncertain          int            `json:"uncertain"`
	BatchItemFailures  int            `json:"batch_item_failures"`
	DuplicatesInEvent  int            `json:"duplicates_in_event,omitempty"` // records repeating an earlier one, not counted above
	Ineligible         map[string]int `json:"ineligible"`                    // by reason
	WindowStart        int64          `json:"window_start"`
	WindowEnd          int64          `json:"window_end"`
	Codes              string         `json:"codes"`
	PossibleDuplicates []string       `json:"possible_duplicate_ids,omitempty"`
}

// Handle decides and moves every record of an event, and reports as batch
// item failures exactly the records whose send failed or got no reply.
func (h *Handler) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	msgs := make([]*sqsmove.Message, len(ev.Records))
	for i, rec := range ev.Records {
		m := sqsmove.FromLambda(rec)
		msgs[i] = &m
	}
	results := pushreplay.Process(ctx, h.API, h.Config, msgs)
	resp := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
	sum := SummaryLog{Type: "summary", Records: len(results), Ineligible: map[string]int{},
		WindowStart: h.Config.Policy.Start, WindowEnd: h.Config.Policy.End, Codes: h.Config.Policy.CodesString()}
	for _, r := range results {
		h.write(recordLog(r))
		if r.DuplicateOf >= 0 {
			sum.DuplicatesInEvent++ // its id is reported (or not) with the earlier record
			continue
		}
		d := r.Step.Decision
		if d.Eligible {
			sum.Eligible++
		} else {
			sum.Ineligible[string(d.Reason)]++
		}
		switch r.Outcome {
		case sqsmove.OutcomeSent:
			sum.Sent++
		case sqsmove.OutcomeParked:
			sum.Parked++
		case sqsmove.OutcomeUncertain:
			sum.Uncertain++
			sum.PossibleDuplicates = append(sum.PossibleDuplicates, r.MessageID)
		default:
			sum.Failed++
		}
		if r.Retry() {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: r.MessageID})
		}
	}
	sum.BatchItemFailures = len(resp.BatchItemFailures)
	sort.Strings(sum.PossibleDuplicates)
	h.write(sum)
	return resp, nil
}

func recordLog(r pushreplay.Result) RecordLog {
	d := r.Step.Decision
	l := RecordLog{Type: "record", MessageID: r.MessageID, Decision: "park", Eligible: d.Eligible, Target: r.Queue,
		Outcome: string(r.Outcome), NewID: r.NewID, Retry: r.Retry(), PossibleDuplicate: r.PossibleDuplicate(), DuplicateInEvent: r.DuplicateOf >= 0}
	if r.Step.Route.Target != "" {
		l.Decision = "replay"
	}
	if !d.Eligible {
		l.Reason, l.ReasonText, l.Detail = string(d.Reason), d.Reason.Text(), r.Step.Command.Detail
	}
	if r.Err != nil {
		l.Error = r.Err.Error()
	}
	return l
}

func (h *Handler) write(v any) { jsonlog.Line(h.Log, v) }
