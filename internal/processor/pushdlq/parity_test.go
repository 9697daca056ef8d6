package pushdlq_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/deadletter/deadletter/internal/cli/iostreams"
	"github.com/deadletter/deadletter/internal/cli/pushdlqcmd"
	"github.com/deadletter/deadletter/internal/processor/pushdlq"
	"github.com/deadletter/deadletter/internal/pushpolicy"
	"github.com/deadletter/deadletter/internal/pushpolicy/gen"
	"github.com/deadletter/deadletter/internal/sqsmove"
	"github.com/deadletter/deadletter/internal/testsupport"
	"github.com/deadletter/deadletter/internal/testsupport/lambdart"
)

// decision is what parity compares: eligible or not, the reason, and the
// target (the priority queue; "" for an ineligible message, which the CLI
// releases or parks and the processor parks in the DLQ).
type decision struct {
	Eligible bool
	Reason   string
	Target   string
}

// cliDecisions runs `pushdlq replay --from-env --dry-run -o ndjson`
// in-process, as the CLI tests do, on the environment the processor reads.
func cliDecisions(t *testing.T, c *sqs.Client, env map[string]string) map[string]decision {
	t.Helper()
	ios, _, out, errOut := iostreams.Test()
	f := pushdlqcmd.NewFactory(ios, func(k string) string { return env[k] })
	f.SQS = func(context.Context) (sqsmove.API, string, error) { return c, "test SQS", nil }
	dir := t.TempDir()
	f.StateDir = func() (string, error) { return dir, nil }
	if code := pushdlqcmd.Run(context.Background(), f, []string{"replay", "--from-env", "--dry-run", "-o", "ndjson"}); code != 0 {
		t.Fatalf("pushdlq replay --dry-run: exit %d\n%s", code, errOut)
	}
	got := map[string]decision{}
	sc := bufio.NewScanner(out)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l pushdlqcmd.MessageResult
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("%q: %v", sc.Text(), err)
		}
		if l.Type != "message" {
			continue
		}
		d := decision{Eligible: l.Outcome == "would_send", Reason: aws.ToString(l.Reason)}
		if d.Eligible {
			d.Target = aws.ToString(l.Target)
		} else if l.Outcome != "released" {
			t.Errorf("dry run: %s", sc.Text())
		}
		if _, dup := got[l.MessageID]; dup {
			t.Errorf("dry run: %s reported twice", l.MessageID)
		}
		got[l.MessageID] = d
	}
	return got
}

// processorDecisions builds the processor from env as at a cold start and
// hands it every message, as Lambda would (events of ten records, through
// the event's JSON form), reading the decisions back from its log lines.
func processorDecisions(t *testing.T, env map[string]string, events_ [][]events.SQSMessage, dlq string) (map[string]decision, []pushdlq.SummaryLog) {
	t.Helper()
	var log bytes.Buffer
	h, err := pushdlq.New(context.Background(), func(k string) string { return env[k] }, &log)
	if err != nil {
		t.Fatal(err)
	}
	for _, recs := range events_ {
		b, _ := json.Marshal(events.SQSEvent{Records: recs})
		var ev events.SQSEvent
		if err := json.Unmarshal(b, &ev); err != nil {
			t.Fatal(err)
		}
		resp, err := h.Handle(context.Background(), ev)
		if err != nil || len(resp.BatchItemFailures) > 0 {
			t.Fatalf("handler: %v, batch item failures %v\n%s", err, resp.BatchItemFailures, log.String())
		}
	}
	got := map[string]decision{}
	var sums []pushdlq.SummaryLog
	sc := bufio.NewScanner(&log)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var kind struct{ Type string }
		json.Unmarshal(sc.Bytes(), &kind)
		if kind.Type == "warning" {
			continue
		}
		if kind.Type == "summary" {
			var s pushdlq.SummaryLog
			json.Unmarshal(sc.Bytes(), &s)
			sums = append(sums, s)
			continue
		}
		var l pushdlq.RecordLog
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil || l.Type != "record" {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		d := decision{Eligible: l.Eligible, Reason: l.Reason}
		switch {
		case l.Eligible && l.Decision == "replay" && l.Outcome == "sent":
			d.Target = l.Target
		case !l.Eligible && l.Decision == "park" && l.Outcome == "parked" && l.Target == dlq:
		default:
			t.Errorf("processor: %s", sc.Text())
		}
		if _, dup := got[l.MessageID]; dup {
			t.Errorf("processor: %s logged twice", l.MessageID)
		}
		got[l.MessageID] = d
	}
	return got, sums
}

// The CLI and the processor decide every message of a 320-message DLQ the
// same way (every code, both window edges and 1 ms outside them, the three
// createdAt forms, missing metadata, malformed bodies), under a list of
// codes and under '*', and both agree with the decision the corpus
// expects. The processor's sends are then checked message by message:
// every eligible message in its priority queue once, attributes kept;
// every other one parked.
func TestDecisionParityWithPushdlqReplay(t *testing.T) {
	endpoint := testsupport.SQSEndpoint(t)
	awsEnv(t, endpoint)
	c := testsupport.SQSClientAt(endpoint)
	p := testsupport.NewPushDLQ(t, c, 320)
	start, end := gen.ParityStart.UnixMilli(), gen.ParityEnd.UnixMilli()
	_, codes, _ := pushpolicy.ParseCodes(gen.ParityCodes)

	policies := []bool{false, true} // PROCESS_ERROR_CODES=ParityCodes, then '*'
	cli := map[bool]map[string]decision{}
	for _, all := range policies {
		cli[all] = cliDecisions(t, c, p.Env(all))
	}
	msgs := testsupport.Receive(t, c, p.DLQ, len(p.IDs), 900)
	var batches [][]events.SQSMessage
	for i := 0; i < len(msgs); i += 10 {
		ev := lambdart.NewSQSEvent("arn:aws:sqs:us-east-1:000000000000:"+sqsmove.Name(p.DLQ), "us-east-1", msgs[i:min(i+10, len(msgs))])
		batches = append(batches, ev.Records)
	}
	for _, all := range policies {
		proc, sums := processorDecisions(t, p.Env(all), batches, p.DLQ)
		same, eligible := 0, 0
		reasons := map[string]int{}
		for _, id := range p.IDs {
			cs := p.ByID[id]
			el, prio, reason := cs.Expect(all, codes, start, end)
			want := decision{Eligible: el, Reason: string(reason)}
			if el {
				want.Target = p.Target(prio)
				eligible++
			}
			c, okc := cli[all][id]
			q, okp := proc[id]
			switch {
			case !okc || !okp:
				t.Errorf("all=%v %s (%s): decided by the CLI %v, by the processor %v", all, cs.Label, cs.Body, okc, okp)
			case c != q:
				t.Errorf("all=%v %s (%s): CLI %+v, processor %+v", all, cs.Label, cs.Body, c, q)
			case c != want:
				t.Errorf("all=%v %s (%s): both decided %+v, the corpus expects %+v", all, cs.Label, cs.Body, c, want)
			default:
				same++
				reasons[c.Reason]++
			}
		}
		if len(cli[all]) != len(p.IDs) || len(proc) != len(p.IDs) {
			t.Errorf("all=%v: the CLI decided %d messages, the processor %d, of %d", all, len(cli[all]), len(proc), len(p.IDs))
		}
		logged := 0
		for _, s := range sums {
			logged += s.Records
		}
		if logged != len(p.IDs) {
			t.Errorf("summaries count %d records", logged)
		}
		t.Logf("codes %s: %d of %d messages decided identically (%d eligible; by reason %v)",
			map[bool]string{false: gen.ParityCodes, true: "*"}[all], same, len(p.IDs), eligible, reasons)
		if all {
			break
		}
		// Where the first processor run put them: each eligible message
		// once in its priority queue with its attributes, the rest parked.
		at := map[string]int{}
		for i := range p.IDs {
			at[p.Cases[i].Body] = i
		}
		for _, prio := range gen.ParityPriorities {
			for _, m := range testsupport.Drain(t, c, p.Target(prio), 2*time.Second) {
				i, ok := at[aws.ToString(m.Body)]
				if !ok {
					t.Errorf("P%d: unknown body %s", prio, aws.ToString(m.Body))
					continue
				}
				delete(at, aws.ToString(m.Body))
				if el, pr, _ := p.Cases[i].Expect(false, codes, start, end); !el || pr != prio {
					t.Errorf("P%d has %s", prio, p.Cases[i].Body)
				}
				if msg := testsupport.CheckPushAttributes(i, m.MessageAttributes); msg != "" {
					t.Errorf("P%d: %s: %s", prio, p.Cases[i].Label, msg)
				}
			}
		}
		for _, i := range at {
			if el, _, _ := p.Cases[i].Expect(false, codes, start, end); el {
				t.Errorf("eligible %s (%s) is in no priority queue", p.Cases[i].Label, p.Cases[i].Body)
			}
		}
		if n := len(at); n != len(p.IDs)-eligible {
			t.Errorf("%d messages left out of the priority queues, want %d", n, len(p.IDs)-eligible)
		}
		if n := delayedIn(t, c, p.DLQ); n != len(p.IDs)-eligible {
			t.Errorf("%d messages parked (delayed) in the DLQ, want %d", n, len(p.IDs)-eligible)
		}
	}
}
