package pushdlq_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/deadletter/deadletter/internal/pushpolicy"
	"github.com/deadletter/deadletter/internal/pushpolicy/gen"
	"github.com/deadletter/deadletter/internal/testsupport"
	"github.com/deadletter/deadletter/internal/testsupport/lambdart"
)

// The tests below run the real bootstrap (built as goreleaser builds it)
// under the local Lambda Runtime API, fed from the DLQ by the event source
// mapping loop with ReportBatchItemFailures: the ESM deletes from the DLQ
// exactly what the function did not report as failed.

// rtWorld is a DLQ, its priority queues and the function under the
// runtime harness.
type rtWorld struct {
	t      *testing.T
	c      *sqs.Client
	dlq    string
	base   string
	rt     *lambdart.Runtime
	esm    *lambdart.ESM
	bodies []string
	ids    []string
	proxy  *testsupport.Proxy
}

// newRTWorld creates the queues (priorities), seeds bodies with
// attributes, and starts the function with its SQS endpoint behind a proxy.
func newRTWorld(t *testing.T, codes string, bodies []string, priorities ...int) *rtWorld {
	t.Helper()
	endpoint := testsupport.SQSEndpoint(t)
	w := &rtWorld{t: t, c: testsupport.SQSClientAt(endpoint), bodies: bodies}
	w.proxy = testsupport.NewProxy(t, endpoint)
	w.dlq, w.base = testsupport.NewPushQueues(t, w.c, "rt", priorities...)
	w.ids = testsupport.SendBodies(t, w.c, w.dlq, bodies, testsupport.PushAttributes)
	w.start(lambdart.Env(processorEnv(w.dlq, w.base, codes), map[string]string{"AWS_ENDPOINT_URL_SQS": w.proxy.URL}))
	return w
}

func (w *rtWorld) start(env map[string]string) {
	w.rt = lambdart.Start(w.t, lambdart.Function{Bootstrap: lambdart.Build(w.t, "./cmd/push-dlq"), Env: env, Name: "push-dlq"})
	w.esm = &lambdart.ESM{Client: w.c, QueueURL: w.dlq, VisibilityTimeout: 2, ReportBatchItemFailures: true}
}

func (w *rtWorld) drain(idle time.Duration) lambdart.DrainStats {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s, err := w.esm.Drain(ctx, w.rt, idle)
	if err != nil {
		w.t.Fatalf("drain: %v\n%s", err, w.rt.Logs())
	}
	return s
}

// places drains the priority queues: seeded index -> how many copies each
// queue holds, checking attributes.
func (w *rtWorld) places(priorities ...int) map[int]map[int]int {
	w.t.Helper()
	byBody := map[string]int{}
	for i, b := range w.bodies {
		byBody[b] = i
	}
	out := map[int]map[int]int{}
	for _, p := range priorities {
		for _, m := range testsupport.Drain(w.t, w.c, pushpolicy.TargetURL(w.base, p), 2*time.Second) {
			i, ok := byBody[aws.ToString(m.Body)]
			if !ok {
				w.t.Errorf("P%d: a body that was never seeded: %s", p, aws.ToString(m.Body))
				continue
			}
			if msg := testsupport.CheckPushAttributes(i, m.MessageAttributes); msg != "" {
				w.t.Errorf("P%d: body %d: %s", p, i, msg)
			}
			if out[i] == nil {
				out[i] = map[int]int{}
			}
			out[i][p]++
		}
	}
	return out
}

// dlqCounts is what the DLQ holds: visible plus in flight, and delayed
// (parked).
func (w *rtWorld) dlqCounts() (held, delayed int) {
	out, err := w.c.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(w.dlq),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}})
	if err != nil {
		w.t.Fatal(err)
	}
	var v, f, d int
	fmt.Sscan(out.Attributes["ApproximateNumberOfMessages"], &v)
	fmt.Sscan(out.Attributes["ApproximateNumberOfMessagesNotVisible"], &f)
	fmt.Sscan(out.Attributes["ApproximateNumberOfMessagesDelayed"], &d)
	return v + f, d
}

// records are the function's per-record log lines, by message id (the
// last one wins: a retried record logs again).
func (w *rtWorld) records() map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, l := range w.rt.JSONLogs() {
		if l["type"] == "record" {
			out[l["message_id"].(string)] = l
		}
	}
	return out
}

// Decision parity through the runtime: the real bootstrap, fed the
// 320-message parity DLQ by the event source mapping, decides every
// message as `pushdlq replay --dry-run -o ndjson` does, and every message
// ends in exactly one place: eligible ones once in their priority queue
// (attributes kept), the rest parked in the DLQ.
func TestRuntimeDecisionParity(t *testing.T) {
	endpoint := testsupport.SQSEndpoint(t)
	awsEnv(t, endpoint)
	c := testsupport.SQSClientAt(endpoint)
	p := testsupport.NewPushDLQ(t, c, 320)
	cli := cliDecisions(t, c, p.Env(false))

	w := &rtWorld{t: t, c: c, dlq: p.DLQ, base: p.Base}
	for _, cs := range p.Cases {
		w.bodies = append(w.bodies, cs.Body)
	}
	w.start(lambdart.Env(lambdart.ServiceEnv(t, "sqs"), p.Env(false)))
	s := w.drain(3 * time.Second)
	if s.Received != len(p.IDs) || s.Deleted != len(p.IDs) || s.Failed != 0 || s.Crashes+s.FunctionErrors+s.BadResponses != 0 {
		t.Fatalf("drain: %s\n%s", drained(s), w.rt.Logs())
	}
	recs := w.records()
	start, end := gen.ParityStart.UnixMilli(), gen.ParityEnd.UnixMilli()
	_, codes, _ := pushpolicy.ParseCodes(gen.ParityCodes)
	same, eligible := 0, 0
	for _, id := range p.IDs {
		l, ok := recs[id]
		if !ok {
			t.Errorf("%s: no log line", id)
			continue
		}
		got := decision{Eligible: l["eligible"] == true}
		got.Reason, _ = l["reason"].(string)
		if got.Eligible {
			got.Target, _ = l["target"].(string)
			eligible++
		}
		el, prio, reason := p.ByID[id].Expect(false, codes, start, end)
		want := decision{Eligible: el, Reason: string(reason)}
		if el {
			want.Target = p.Target(prio)
		}
		if got != cli[id] || got != want {
			t.Errorf("%s (%s): function %+v, CLI %+v, corpus %+v", p.ByID[id].Label, p.ByID[id].Body, got, cli[id], want)
			continue
		}
		same++
	}
	places := w.places(gen.ParityPriorities...)
	for i, cs := range p.Cases {
		el, prio, _ := cs.Expect(false, codes, start, end)
		if el && (len(places[i]) != 1 || places[i][prio] != 1) {
			t.Errorf("%s: in %v, want once in P%d", cs.Label, places[i], prio)
		}
		if !el && len(places[i]) != 0 {
			t.Errorf("%s: ineligible, in %v", cs.Label, places[i])
		}
	}
	if held, delayed := w.dlqCounts(); held != 0 || delayed != len(p.IDs)-eligible {
		t.Errorf("DLQ: %d held, %d parked, want 0 and %d", held, delayed, len(p.IDs)-eligible)
	}
	t.Logf("through the runtime: %d of %d decisions identical to pushdlq replay (%d eligible); %s; %s", same, len(p.IDs), eligible, drained(s), w.rt.Stats().Summary())
}

// conserve checks that every seeded message is in exactly one place, or
// two for the listed possible duplicates: eligible ones in their priority
// queue, the others parked in the DLQ (counted: they are delayed), and
// nothing left to deliver in the DLQ. It returns the number of duplicates.
func (w *rtWorld) conserve(target func(i int) int, dupOK map[string]bool, priorities ...int) int {
	w.t.Helper()
	places := w.places(priorities...)
	dups, parked := 0, 0
	for i, id := range w.ids {
		p := target(i)
		if p < 0 {
			parked++
			if len(places[i]) != 0 {
				w.t.Errorf("body %d (parked) is in %v", i, places[i])
			}
			continue
		}
		switch n := places[i][p]; {
		case n == 1 && len(places[i]) == 1:
		case n == 2 && len(places[i]) == 1 && dupOK[id]:
			dups++
		default:
			w.t.Errorf("body %d (%s) is in %v, want once in P%d (possible duplicate: %v)", i, w.bodies[i], places[i], p, dupOK[id])
		}
	}
	held, delayed := w.dlqCounts()
	if held != 0 {
		w.t.Errorf("%d messages still in the DLQ to be delivered", held)
	}
	extraParks := 0
	for id := range dupOK {
		for i, x := range w.ids {
			if x == id && target(i) < 0 {
				extraParks++
			}
		}
	}
	if delayed < parked || delayed > parked+extraParks {
		w.t.Errorf("%d parked in the DLQ, want %d (+ up to %d parked twice)", delayed, parked, extraParks)
	}
	return dups + delayed - parked
}

// A missing target queue fails only its records; they stay in the DLQ,
// come back, fail again, and are delivered once the queue exists. Nothing
// else is sent twice.
func TestRuntimeMissingTargetQueue(t *testing.T) {
	var bodies []string
	target := map[int]int{}
	for i := range 30 {
		switch i % 3 {
		case 0:
			bodies, target[i] = append(bodies, body(1, inWindow+int64(i), 1004, fmt.Sprint("p1-", i))), 1
		case 1:
			bodies, target[i] = append(bodies, body(9, inWindow+int64(i), 1004, fmt.Sprint("p9-", i))), 9
		default:
			bodies, target[i] = append(bodies, body(1, before, 1004, fmt.Sprint("old-", i))), -1
		}
	}
	w := newRTWorld(t, "1004", bodies, 1)
	s := w.drain(time.Second)
	recs := w.records()
	for i, id := range w.ids {
		l := recs[id]
		if (target[i] == 9) != (l["outcome"] == "failed") || (target[i] == 9 && !strings.Contains(fmt.Sprint(l["error"]), "NonExistentQueue")) {
			t.Errorf("body %d: %v", i, l)
		}
	}
	if s.Failed < 10 {
		t.Errorf("drain: %s: the 10 P9 records were not reported", drained(s))
	}
	if held, _ := w.dlqCounts(); held != 10 {
		t.Errorf("%d messages in the DLQ, want the 10 for P9", held)
	}
	testsupport.CreateQueue(t, w.c, strings.TrimPrefix(pushpolicy.TargetURL(w.base, 9), w.base[:strings.LastIndex(w.base, "/")+1]), nil)
	w.drain(4 * time.Second)
	if dups := w.conserve(func(i int) int { return target[i] }, nil, 1, 9); dups != 0 {
		t.Errorf("%d duplicates", dups)
	}
}

// One entry of a send rejected (while the fault lasts): only its record
// comes back; it is delivered once the fault is gone, and nothing else is
// sent twice.
func TestRuntimeRejectedEntry(t *testing.T) {
	var bodies []string
	target := map[int]int{}
	for i := range 25 {
		m := fmt.Sprint("ok-", i)
		if i == 7 {
			m = "reject-me"
		}
		bodies, target[i] = append(bodies, body(1+i%2, inWindow+int64(i), 1004, m)), 1+i%2
		if i%5 == 4 {
			bodies[i], target[i] = body(1, before, 1004, m), -1
		}
	}
	w := newRTWorld(t, "1004", bodies, 1, 2)
	var rejecting atomic.Bool
	rejecting.Store(true)
	rejected := rejectEntries(w.proxy, "reject-me", rejecting.Load)
	s := w.drain(time.Second)
	rejectedID := w.ids[7]
	if l := w.records()[rejectedID]; l["outcome"] != "failed" || !strings.Contains(fmt.Sprint(l["error"]), "rejected by the test") {
		t.Errorf("rejected record logged %v", l)
	}
	for _, r := range s.Results {
		for _, id := range r.FailedIDs {
			if id != rejectedID {
				t.Errorf("%s reported failed", id)
			}
		}
	}
	if held, _ := w.dlqCounts(); held != 1 || rejected.Load() == 0 {
		t.Errorf("%d messages in the DLQ, want the rejected one; %d rejections", held, rejected.Load())
	}
	rejecting.Store(false)
	w.drain(4 * time.Second)
	if dups := w.conserve(func(i int) int { return target[i] }, nil, 1, 2); dups != 0 {
		t.Errorf("%d duplicates", dups)
	}
}

// The function killed mid-invocation: once right after it received a
// batch, once after its sends and before its response. The killed batches
// come back whole (the ESM deletes nothing of a crashed invocation) and are
// processed again: no message is lost, and only messages of the batch in
// flight when the function died may be duplicated; the test counts them.
func TestRuntimeKilledMidInvocation(t *testing.T) {
	var bodies []string
	target := map[int]int{}
	for i := range 60 {
		bodies, target[i] = append(bodies, body(1+i%2, inWindow+int64(i), 1004, fmt.Sprint("m-", i))), 1+i%2
		if i%4 == 3 {
			bodies[i], target[i] = body(1, inWindow, 1001, fmt.Sprint("m-", i)), -1
		}
	}
	w := newRTWorld(t, "1004", bodies, 1, 2)
	w.rt.KillDuring(2) // right after it received its second batch: before it sends anything
	// The fifth send: killed once SQS has taken it, before the function
	// hears back (so before it answers its invocation).
	var sends atomic.Int32
	w.proxy.SetAfter(func(op string, _, resp []byte) []byte {
		if op == "SendMessageBatch" && sends.Add(1) == 5 {
			w.rt.Kill()
		}
		return resp
	})
	s := w.drain(4 * time.Second)
	if s.Crashes != 2 {
		t.Fatalf("drain: %s: want 2 crashes", drained(s))
	}
	inFlight := map[string]bool{}
	for _, r := range s.Results {
		if errors.Is(r.Err, lambdart.ErrCrashed) {
			for _, rec := range r.Event.Records {
				inFlight[rec.MessageId] = true
			}
		}
	}
	dups := w.conserve(func(i int) int { return target[i] }, inFlight, 1, 2)
	st := w.rt.Stats()
	if st.ColdStarts != 3 {
		t.Errorf("%d cold starts, want 3 (the first and one after each kill)", st.ColdStarts)
	}
	t.Logf("killed twice: %d messages in the crashed batches, %d duplicated (parked twice included), none lost; %s", len(inFlight), dups, st.Summary())
}

// drained is a DrainStats without its results, for messages.
func drained(s lambdart.DrainStats) string {
	return fmt.Sprintf("%d polls, %d invocations, %d received, %d deleted, %d failed, %d crashes, %d timeouts, %d function errors, %d bad responses",
		s.Polls, s.Invocations, s.Received, s.Deleted, s.Failed, s.Crashes, s.Timeouts, s.FunctionErrors, s.BadResponses)
}
