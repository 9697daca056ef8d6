package pushdlq_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/deadletter/deadletter/internal/processor/pushdlq"
	"github.com/deadletter/deadletter/internal/pushpolicy"
	"github.com/deadletter/deadletter/internal/sqsmove"
	"github.com/deadletter/deadletter/internal/testsupport"
	"github.com/deadletter/deadletter/internal/testsupport/lambdart"
)

const (
	winStart = "2025-11-14T08:30:00Z"
	winEnd   = "2025-11-14T09:00:00Z"
	inWindow = int64(1763109600000) // 08:40
	before   = int64(1763105400000) // 07:30
)

// fixture is a DLQ with priority queues on the test SQS server, and the
// processor built as at a cold start, its SQS endpoint (fauxqs, or a
// proxy in front of it) taken from AWS_ENDPOINT_URL_SQS.
type fixture struct {
	t      *testing.T
	c      *sqs.Client
	dlq    string
	base   string
	h      *pushdlq.Handler
	log    *bytes.Buffer
	bodies map[string]int // message id -> index of the body seeded
	proxy  *testsupport.Proxy
}

func awsEnv(t *testing.T, sqsEndpoint string) {
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "testtesttest")
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_ENDPOINT_URL", "")
	t.Setenv("AWS_ENDPOINT_URL_SQS", sqsEndpoint)
}

// processorEnv is the function's environment for the test window.
func processorEnv(dlq, base, codes string) map[string]string {
	return map[string]string{pushpolicy.EnvDLQURL: dlq, pushpolicy.EnvBaseURL: base, pushpolicy.EnvStartAt: winStart, pushpolicy.EnvEndAt: winEnd, pushpolicy.EnvErrorCodes: codes}
}

func newFixture(t *testing.T, codes string, priorities ...int) *fixture {
	t.Helper()
	endpoint := testsupport.SQSEndpoint(t)
	f := &fixture{t: t, c: testsupport.SQSClientAt(endpoint), log: &bytes.Buffer{}, bodies: map[string]int{}}
	f.proxy = testsupport.NewProxy(t, endpoint)
	f.dlq, f.base = testsupport.NewPushQueues(t, f.c, "pf", priorities...)
	awsEnv(t, f.proxy.URL)
	env := processorEnv(f.dlq, f.base, codes)
	h, err := pushdlq.New(context.Background(), func(k string) string { return env[k] }, f.log)
	if err != nil {
		t.Fatal(err)
	}
	f.h = h
	return f
}

func body(priority int, created int64, code int, marker string) string {
	return fmt.Sprintf(`{"action":"push","notificationId":%q,"priority":%d,"createdAt":%d,"errorCode":%d,"errorMessage":"x","future":{"kept":[1,2]}}`,
		marker, priority, created, code)
}

// seed puts bodies on the DLQ with testsupport.PushAttributes, receives
// them all and returns them as the event Lambda would deliver, through
// the event's JSON form.
func (f *fixture) seed(bodies ...string) events.SQSEvent {
	f.t.Helper()
	ids := testsupport.SendBodies(f.t, f.c, f.dlq, bodies, testsupport.PushAttributes)
	for i, id := range ids {
		f.bodies[id] = i
	}
	msgs := testsupport.Receive(f.t, f.c, f.dlq, len(bodies), 600)
	ev := lambdart.NewSQSEvent("arn:aws:sqs:us-east-1:000000000000:"+sqsmove.Name(f.dlq), "us-east-1", msgs)
	b, err := json.Marshal(ev)
	if err != nil {
		f.t.Fatal(err)
	}
	var out events.SQSEvent
	if err := json.Unmarshal(b, &out); err != nil {
		f.t.Fatal(err)
	}
	return out
}

// handleRaw runs the handler on an event whose records may share message
// ids: it returns the batch item failures in order, every record line in
// order, and the summary (one, and one line for each record).
func (f *fixture) handleRaw(ev events.SQSEvent) (failures []string, lines []pushdlq.RecordLog, sum pushdlq.SummaryLog) {
	f.t.Helper()
	f.log.Reset()
	resp, err := f.h.Handle(context.Background(), ev)
	if err != nil {
		f.t.Fatalf("handler returned an error (the whole batch would be retried): %v", err)
	}
	for _, x := range resp.BatchItemFailures {
		failures = append(failures, x.ItemIdentifier)
	}
	sc := bufio.NewScanner(f.log)
	n := 0
	for sc.Scan() {
		var kind struct{ Type string }
		if err := json.Unmarshal(sc.Bytes(), &kind); err != nil {
			f.t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		switch kind.Type {
		case "record":
			var l pushdlq.RecordLog
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				f.t.Fatalf("log line %q: %v", sc.Text(), err)
			}
			lines = append(lines, l)
		case "summary":
			n++
			if err := json.Unmarshal(sc.Bytes(), &sum); err != nil {
				f.t.Fatalf("log line %q: %v", sc.Text(), err)
			}
		default:
			f.t.Fatalf("log line %q", sc.Text())
		}
	}
	if len(lines) != len(ev.Records) || n != 1 {
		f.t.Fatalf("%d record lines for %d records, %d summaries:\n%s", len(lines), len(ev.Records), n, f.log)
	}
	return failures, lines, sum
}

// handle is handleRaw by message id.
func (f *fixture) handle(ev events.SQSEvent) (failed map[string]bool, lines map[string]pushdlq.RecordLog, sum pushdlq.SummaryLog) {
	f.t.Helper()
	failures, list, sum := f.handleRaw(ev)
	failed = map[string]bool{}
	for _, id := range failures {
		failed[id] = true
	}
	lines = map[string]pushdlq.RecordLog{}
	for _, l := range list {
		lines[l.MessageID] = l
	}
	if len(lines) != len(ev.Records) {
		f.t.Fatalf("%d record lines for %d records:\n%s", len(lines), len(ev.Records), f.log)
	}
	return failed, lines, sum
}

// deleteDone deletes from the DLQ what the event source mapping deletes:
// every record not reported as a batch item failure.
func (f *fixture) deleteDone(ev events.SQSEvent, failed map[string]bool) {
	for _, r := range ev.Records {
		if !failed[r.MessageId] {
			if _, err := f.c.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(f.dlq), ReceiptHandle: aws.String(r.ReceiptHandle)}); err != nil {
				f.t.Fatal(err)
			}
		}
	}
}

// queue drains a priority queue: body marker -> count, checking that every
// message kept its attributes.
func (f *fixture) queue(priority int) map[string]int {
	f.t.Helper()
	out := map[string]int{}
	u := pushpolicy.TargetURL(f.base, priority)
	for _, m := range testsupport.Drain(f.t, f.c, u, 2*time.Second) {
		out[marker(aws.ToString(m.Body))]++
		i := -1
		fmt.Sscanf(aws.ToString(m.MessageAttributes["origin"].StringValue), "push-%d", &i)
		if msg := testsupport.CheckPushAttributes(i, m.MessageAttributes); msg != "" {
			f.t.Errorf("P%d: %s: %s", priority, aws.ToString(m.Body), msg)
		}
	}
	return out
}

func marker(b string) string {
	var v struct {
		N string `json:"notificationId"`
	}
	if json.Unmarshal([]byte(b), &v) != nil || v.N == "" {
		return b
	}
	return v.N
}

// delayed is the number of parked (delayed) messages in the DLQ.
func (f *fixture) delayed() int { return delayedIn(f.t, f.c, f.dlq) }

// delayedIn is the number of delayed messages in a queue.
func delayedIn(t *testing.T, c *sqs.Client, queueURL string) int {
	t.Helper()
	out, err := c.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(queueURL),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessagesDelayed}})
	if err != nil {
		t.Fatal(err)
	}
	var n int
	fmt.Sscan(out.Attributes["ApproximateNumberOfMessagesDelayed"], &n)
	return n
}

// recordSends records the entries of the SendMessageBatch requests that
// pass the proxy, with the queue each went to.
type sentEntry struct {
	Queue string
	testsupport.SendBatchEntry
}

func (f *fixture) recordSends() *[]sentEntry {
	var sent []sentEntry
	f.proxy.SetHook(func(op string, b []byte) ([]byte, *testsupport.Reply) {
		if op == "SendMessageBatch" {
			in := testsupport.ParseSendBatch(f.t, b)
			for _, e := range in.Entries {
				sent = append(sent, sentEntry{in.QueueUrl, e})
			}
		}
		return nil, nil
	})
	return &sent
}

func TestEligibleAreSentAndTheRestParkedWithDelayAndAttributes(t *testing.T) {
	f := newFixture(t, "1004,2003", 1, 2)
	sent := f.recordSends()
	ev := f.seed(
		body(1, inWindow, 1004, "e1"), body(1, inWindow+1, 2003, "e2"), body(2, inWindow, 1004, "e3"),
		body(1, inWindow, 1001, "not-selected"), body(2, before, 1004, "before"),
		`not json at all`, `{"priority":"high","createdAt":1763109600000,"errorCode":1004}`,
	)
	failed, lines, sum := f.handle(ev)
	if len(failed) != 0 {
		t.Fatalf("batch item failures %v; log:\n%s", failed, f.log)
	}
	f.deleteDone(ev, failed)
	if p1, p2 := f.queue(1), f.queue(2); len(p1) != 2 || p1["e1"] != 1 || p1["e2"] != 1 || len(p2) != 1 || p2["e3"] != 1 {
		t.Errorf("P1 %v, P2 %v", p1, p2)
	}
	if n := f.delayed(); n != 4 {
		t.Errorf("%d delayed messages in the DLQ, want the 4 parked", n)
	}
	if !testsupport.QueueEmpty(t, f.c, f.dlq) && f.delayed() != 4 {
		t.Error("DLQ holds more than the parked messages")
	}
	// What went to the DLQ: each ineligible body, byte for byte, delayed
	// 900 s, its attributes kept.
	parked := 0
	for _, e := range *sent {
		if e.Queue != f.dlq {
			continue
		}
		parked++
		if e.DelaySeconds != pushpolicy.ParkDelaySeconds {
			t.Errorf("%s parked with DelaySeconds %d", e.MessageBody, e.DelaySeconds)
		}
		if len(e.MessageAttributes) != 3 || e.MessageAttributes["blob"].DataType != "Binary" || len(e.MessageAttributes["blob"].BinaryValue) != 3 ||
			e.MessageAttributes["attempt"].DataType != "Number" || !strings.HasPrefix(aws.ToString(e.MessageAttributes["origin"].StringValue), "push-") {
			t.Errorf("%s parked with attributes %+v", e.MessageBody, e.MessageAttributes)
		}
	}
	if parked != 4 {
		t.Errorf("%d parks sent, want 4", parked)
	}
	reasons := map[string]string{}
	for id, l := range lines {
		m := marker(ev.Records[indexOf(ev, id)].Body)
		reasons[m] = l.Reason
		if l.Retry || (l.Outcome != "sent" && l.Outcome != "parked") {
			t.Errorf("%s: %+v", m, l)
		}
		if l.Eligible != (l.Decision == "replay") || (!l.Eligible && l.Target != f.dlq) {
			t.Errorf("%s: %+v", m, l)
		}
	}
	want := map[string]string{"e1": "", "e2": "", "e3": "", "not-selected": "code_not_selected", "before": "before_window",
		"not json at all": "body_not_json", `{"priority":"high","createdAt":1763109600000,"errorCode":1004}`: "bad_priority"}
	for k, v := range want {
		if r, ok := reasons[k]; !ok || r != v {
			t.Errorf("%s: reason %q, want %q", k, r, v)
		}
	}
	if sum.Records != 7 || sum.Eligible != 3 || sum.Sent != 3 || sum.Parked != 4 || sum.BatchItemFailures != 0 || sum.Ineligible["body_not_json"] != 1 {
		t.Errorf("summary %+v", sum)
	}
}

func indexOf(ev events.SQSEvent, id string) int {
	for i, r := range ev.Records {
		if r.MessageId == id {
			return i
		}
	}
	return -1
}

// A priority whose queue does not exist fails only its own records; the
// others are sent and parked, and nothing is lost: the failed records
// stay in the DLQ (the event source mapping does not delete them).
func TestMissingTargetQueueFailsOnlyItsRecords(t *testing.T) {
	f := newFixture(t, "1004", 1)
	ev := f.seed(body(1, inWindow, 1004, "p1-a"), body(9, inWindow, 1004, "p9-a"), body(1, inWindow, 1004, "p1-b"),
		body(9, inWindow+5, 1004, "p9-b"), body(1, before, 1004, "old"))
	failed, lines, sum := f.handle(ev)
	want := map[string]bool{}
	for _, r := range ev.Records {
		if strings.HasPrefix(marker(r.Body), "p9-") {
			want[r.MessageId] = true
		}
	}
	if len(failed) != 2 || !failed[keys(want)[0]] || !failed[keys(want)[1]] {
		t.Fatalf("batch item failures %v, want the two P9 records %v; log:\n%s", failed, want, f.log)
	}
	for id := range want {
		if l := lines[id]; l.Outcome != "failed" || !strings.Contains(l.Error, "NonExistentQueue") || !l.Retry {
			t.Errorf("P9 record logged %+v", l)
		}
	}
	f.deleteDone(ev, failed)
	if p1 := f.queue(1); len(p1) != 2 || p1["p1-a"] != 1 || p1["p1-b"] != 1 {
		t.Errorf("P1 %v", p1)
	}
	if f.delayed() != 1 {
		t.Errorf("parked %d, want 1", f.delayed())
	}
	// The failed records are still in the DLQ: make them visible, as the
	// end of their visibility timeout would.
	for _, r := range ev.Records {
		if failed[r.MessageId] {
			f.c.ChangeMessageVisibility(context.Background(), &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(f.dlq), ReceiptHandle: aws.String(r.ReceiptHandle)})
		}
	}
	back := testsupport.Receive(t, f.c, f.dlq, 2, 60)
	for _, m := range back {
		if !want[aws.ToString(m.MessageId)] {
			t.Errorf("%s back in the DLQ", aws.ToString(m.Body))
		}
	}
	if sum.Failed != 2 || sum.BatchItemFailures != 2 || sum.Sent != 2 || sum.Parked != 1 {
		t.Errorf("summary %+v", sum)
	}
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// One entry of a SendMessageBatch is rejected (the proxy takes it out of
// the request and reports it failed): exactly that record is a batch item
// failure, its batch mates are sent and not reported.
func TestOneRejectedEntryIsExactlyTheBatchItemFailure(t *testing.T) {
	f := newFixture(t, "1004", 1)
	rejected := rejectEntries(f.proxy, "reject-me", nil)
	var bodies []string
	for i := range 10 {
		m := fmt.Sprint("ok-", i)
		if i == 4 {
			m = "reject-me"
		}
		bodies = append(bodies, body(1, inWindow+int64(i), 1004, m))
	}
	ev := f.seed(bodies...)
	failed, lines, sum := f.handle(ev)
	var want string
	for _, r := range ev.Records {
		if marker(r.Body) == "reject-me" {
			want = r.MessageId
		}
	}
	if len(failed) != 1 || !failed[want] {
		t.Fatalf("batch item failures %v, want exactly %s; log:\n%s", failed, want, f.log)
	}
	if n := rejected.Load(); n < 2 {
		t.Errorf("the rejected entry was tried %d times; a server-side failure is retried", n)
	}
	if l := lines[want]; l.Outcome != "failed" || !strings.Contains(l.Error, "rejected by the test") {
		t.Errorf("logged %+v", l)
	}
	f.deleteDone(ev, failed)
	p1 := f.queue(1)
	if len(p1) != 9 || p1["reject-me"] != 0 {
		t.Errorf("P1 %v", p1)
	}
	if sum.Sent != 9 || sum.Failed != 1 || sum.BatchItemFailures != 1 {
		t.Errorf("summary %+v", sum)
	}
}

// A send whose reply is lost may have delivered: the records are batch
// item failures (a duplicate is allowed, a loss is not), logged as
// possible duplicates; the redelivered batch sends them again, so each is
// in its target at most twice and none is missing.
func TestLostReplyIsABatchItemFailureAndAtWorstADuplicate(t *testing.T) {
	f := newFixture(t, "1004", 1)
	f.proxy.SetLoseReply(func(op string) bool { return op == "SendMessageBatch" })
	var bodies []string
	for i := range 6 {
		bodies = append(bodies, body(1, inWindow+int64(i), 1004, fmt.Sprint("m-", i)))
	}
	bodies = append(bodies, body(1, before, 1004, "old"))
	ev := f.seed(bodies...)
	failed, lines, sum := f.handle(ev)
	if len(failed) != 7 {
		t.Fatalf("batch item failures %v, want all 7 records (no reply for any send); log:\n%s", failed, f.log)
	}
	for _, l := range lines {
		if l.Outcome != "uncertain" || !l.PossibleDuplicate || !l.Retry {
			t.Errorf("logged %+v", l)
		}
	}
	if sum.Uncertain != 7 || len(sum.PossibleDuplicates) != 7 {
		t.Errorf("summary %+v", sum)
	}
	// Redelivery: the same records again, now with replies.
	f.proxy.SetLoseReply(nil)
	failed, _, _ = f.handle(ev)
	if len(failed) != 0 {
		t.Fatalf("redelivery: batch item failures %v", failed)
	}
	f.deleteDone(ev, failed)
	p1 := f.queue(1)
	dups := 0
	for i := range 6 {
		switch n := p1[fmt.Sprint("m-", i)]; n {
		case 1:
		case 2:
			dups++
		default:
			t.Errorf("m-%d is in P1 %d times", i, n)
		}
	}
	if dups != 6 || f.delayed() != 2 {
		t.Errorf("%d duplicates in P1 (want 6: every lost reply had delivered), %d parked (want 2)", dups, f.delayed())
	}
	t.Logf("lost replies: 7 records retried, %d duplicates in P1, 1 parked twice, none lost", dups)
}

// A bad variable fails the cold start with its name and value.
func TestBadEnvironmentFailsTheColdStart(t *testing.T) {
	awsEnv(t, "http://127.0.0.1:1")
	env := map[string]string{pushpolicy.EnvDLQURL: "https://sqs/1/push-dlq", pushpolicy.EnvBaseURL: "https://sqs/1/push-",
		pushpolicy.EnvStartAt: "2025-11-14T08:30:00Z", pushpolicy.EnvEndAt: "half past nine", pushpolicy.EnvErrorCodes: "1004"}
	_, err := pushdlq.New(context.Background(), func(k string) string { return env[k] }, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), `PROCESS_END_AT="half past nine"`) {
		t.Fatalf("error %v", err)
	}
	env[pushpolicy.EnvEndAt], env[pushpolicy.EnvErrorCodes] = "2025-11-14T09:00:00Z", "1004,*"
	if _, err = pushdlq.New(context.Background(), func(k string) string { return env[k] }, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), `PROCESS_ERROR_CODES="1004,*"`) {
		t.Fatalf("error %v", err)
	}
	// '*' over more than 24 hours: run (a drop-in replacement), with a warning.
	var log bytes.Buffer
	env[pushpolicy.EnvStartAt], env[pushpolicy.EnvErrorCodes] = "2025-11-12T08:30:00Z", "*"
	if _, err = pushdlq.New(context.Background(), func(k string) string { return env[k] }, &log); err != nil || !strings.Contains(log.String(), `"type":"warning"`) {
		t.Fatalf("error %v, log %s", err, log.String())
	}
}

// rejectEntries makes the proxy reject, in every SendMessageBatch while
// active() (always when nil), each entry whose body contains marker: the
// entry is taken out of the request and reported failed (InternalError, not
// the sender's fault) in the reply; the other entries are sent for real. It
// counts the entries rejected.
func rejectEntries(p *testsupport.Proxy, marker string, active func() bool) *atomic.Int32 {
	var n atomic.Int32
	on := func(op string, b []byte) bool {
		return op == "SendMessageBatch" && bytes.Contains(b, []byte(marker)) && (active == nil || active())
	}
	failure := func(id string) map[string]any {
		return map[string]any{"Id": id, "Code": "InternalError", "SenderFault": false, "Message": "rejected by the test"}
	}
	rejectedIDs := func(b []byte) []string {
		var ids []string
		for _, e := range testsupport.ParseSendBatch(nil, b).Entries {
			if strings.Contains(e.MessageBody, marker) {
				ids = append(ids, e.Id)
			}
		}
		return ids
	}
	p.SetHook(func(op string, b []byte) ([]byte, *testsupport.Reply) {
		if !on(op, b) {
			return nil, nil
		}
		var in map[string]any
		json.Unmarshal(b, &in)
		var kept []any
		for _, e := range in["Entries"].([]any) {
			if strings.Contains(e.(map[string]any)["MessageBody"].(string), marker) {
				n.Add(1)
				continue
			}
			kept = append(kept, e)
		}
		if len(kept) == 0 { // the rejected entries alone
			var failed []any
			for _, id := range rejectedIDs(b) {
				failed = append(failed, failure(id))
			}
			out, _ := json.Marshal(map[string]any{"Successful": []any{}, "Failed": failed})
			return nil, &testsupport.Reply{Status: 200, Body: string(out)}
		}
		in["Entries"] = kept
		nb, _ := json.Marshal(in)
		return nb, nil
	})
	p.SetAfter(func(op string, req, resp []byte) []byte {
		if op != "SendMessageBatch" || !bytes.Contains(req, []byte(marker)) {
			return resp
		}
		var out map[string]any
		if json.Unmarshal(resp, &out) != nil {
			return resp
		}
		listed := map[string]bool{}
		for _, k := range []string{"Successful", "Failed"} {
			l, _ := out[k].([]any)
			for _, e := range l {
				listed[fmt.Sprint(e.(map[string]any)["Id"])] = true
			}
		}
		failed, _ := out["Failed"].([]any)
		for _, id := range rejectedIDs(req) {
			if !listed[id] {
				failed = append(failed, failure(id))
			}
		}
		out["Failed"] = failed
		nb, _ := json.Marshal(out)
		return nb
	})
	return &n
}
