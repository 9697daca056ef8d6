package sqsmove_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/sqsmove"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// fixture is a DLQ and two target queues on the test SQS server, reached
// through a proxy that counts calls and can inject faults.
type fixture struct {
	t       *testing.T
	c       *sqs.Client // direct, for seeding and checking
	api     *sqs.Client // through the proxy, for the code under test
	proxy   *testsupport.Proxy
	dlq     string
	base    string // targets are base+"P1", base+"P2"
	bodies  []string
	journal string
}

func newFixture(t *testing.T, n int, fifo bool) *fixture {
	t.Helper()
	endpoint := testsupport.SQSEndpoint(t)
	f := &fixture{t: t, c: testsupport.SQSClientAt(endpoint)}
	f.proxy = testsupport.NewProxy(t, endpoint)
	f.api = testsupport.SQSClientAt(f.proxy.URL)
	prefix := "mv" + testsupport.RandomHex(3) + "-"
	suffix := ""
	attrs := map[string]string{}
	if fifo {
		suffix, attrs = ".fifo", map[string]string{"FifoQueue": "true"}
	}
	f.dlq = testsupport.CreateQueue(t, f.c, prefix+"dlq"+suffix, attrs)
	f.base = strings.TrimSuffix(f.dlq, "dlq"+suffix)
	testsupport.CreateQueue(t, f.c, prefix+"P1"+suffix, attrs)
	testsupport.CreateQueue(t, f.c, prefix+"P2"+suffix, attrs)
	for i := range n {
		to := []string{"P1", "P2", "none"}[i%3]
		f.bodies = append(f.bodies, fmt.Sprintf(`{"n":%d,"to":%q,"extra":{"keep":"me"}}`, i, to))
	}
	testsupport.SendBodies(t, f.c, f.dlq, f.bodies, attributes)
	f.journal = filepath.Join(t.TempDir(), "journal.ndjson")
	return f
}

// attributes are the message attributes seeded message i carries (where
// checks they are kept).
func attributes(i int) map[string]types.MessageAttributeValue {
	return map[string]types.MessageAttributeValue{
		"trace": {DataType: aws.String("String"), StringValue: aws.String(fmt.Sprint("t", i))},
		"blob":  {DataType: aws.String("Binary"), BinaryValue: []byte{0, 1, byte(i)}},
	}
}

// newHold is a hold on the DLQ through api, closed when the test ends.
func (f *fixture) newHold(api sqsmove.API, visibility time.Duration) *sqsmove.Hold {
	f.t.Helper()
	hold, err := sqsmove.NewHold(api, f.dlq, visibility)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { hold.Close() })
	return hold
}

// holdAll receives the whole DLQ through api into a new hold; seen, when
// not nil, sees each message received.
func (f *fixture) holdAll(api sqsmove.API, visibility time.Duration, seen func(*sqsmove.Message)) *sqsmove.Hold {
	f.t.Helper()
	hold := f.newHold(api, visibility)
	if err := hold.Receive(context.Background(), sqsmove.ReceiveOptions{Wait: time.Second}, func(_ int, m *sqsmove.Message) bool {
		if seen != nil {
			seen(m)
		}
		return false
	}); err != nil {
		f.t.Fatal(err)
	}
	return hold
}

// replay replays what hold holds with the fixture's routes and journal
// (closed when it returns), through f.api at concurrency 4 unless mod
// says otherwise.
func (f *fixture) replay(ctx context.Context, hold *sqsmove.Hold, mod func(*sqsmove.Replayer)) (sqsmove.Counts, error) {
	f.t.Helper()
	j, err := sqsmove.OpenJournal(f.journal)
	if err != nil {
		f.t.Fatal(err)
	}
	r := &sqsmove.Replayer{API: f.api, Hold: hold, Source: f.dlq, Journal: j, Concurrency: 4, Route: f.route}
	if mod != nil {
		mod(r)
	}
	counts, err := r.Run(ctx)
	if cerr := j.Close(); cerr != nil {
		f.t.Fatal(cerr)
	}
	return counts, err
}

// release releases what hold still holds; a failure fails the test.
func (f *fixture) release(hold *sqsmove.Hold) {
	f.t.Helper()
	if _, failures := hold.Release(context.Background()); len(failures) > 0 {
		f.t.Errorf("release failures: %v", failures)
	}
}

func (f *fixture) target(name string) string {
	if sqsmove.IsFIFO(f.dlq) {
		return f.base + name + ".fifo"
	}
	return f.base + name
}

func (f *fixture) route(m *sqsmove.Message) sqsmove.Route {
	switch to := gjson.Get(m.Body, "to").Str; to {
	case "P1", "P2", "P9":
		return sqsmove.Route{Target: f.target(to)}
	case "park":
		return sqsmove.Route{Park: true, Delay: 900}
	}
	return sqsmove.Route{}
}

// run scans the whole DLQ, replays it and releases the rest.
func (f *fixture) run(ctx context.Context, mod func(*sqsmove.Replayer)) (sqsmove.Counts, []sqsmove.Result, error) {
	f.t.Helper()
	hold := f.holdAll(f.api, 60*time.Second, nil)
	var results []sqsmove.Result
	resCh := make(chan sqsmove.Result, 1024)
	done := make(chan struct{})
	go func() {
		for r := range resCh {
			results = append(results, r)
		}
		close(done)
	}()
	counts, runErr := f.replay(ctx, hold, func(r *sqsmove.Replayer) {
		r.OnResult = func(res sqsmove.Result) { resCh <- res }
		if mod != nil {
			mod(r)
		}
	})
	close(resCh)
	<-done
	f.release(hold)
	return counts, results, runErr
}

// where drains every queue and returns, for each original body, the
// queues it is now in (by name suffix).
func (f *fixture) where() map[string][]string {
	f.t.Helper()
	out := map[string][]string{}
	for _, q := range []string{"dlq", "P1", "P2"} {
		u := f.target(q)
		for _, m := range testsupport.Drain(f.t, f.c, u, 3*time.Second) {
			out[aws.ToString(m.Body)] = append(out[aws.ToString(m.Body)], q)
			if m.MessageAttributes["trace"].StringValue == nil || len(m.MessageAttributes["blob"].BinaryValue) != 3 {
				f.t.Errorf("message in %s lost its attributes: %v", q, m.MessageAttributes)
			}
		}
	}
	return out
}

// wantEachOnce checks that every original message is in exactly one place,
// the one it was routed to (or the DLQ when stay says so).
func (f *fixture) wantEachOnce(stay func(body string) bool) {
	f.t.Helper()
	places := f.where()
	for _, b := range f.bodies {
		want := gjson.Get(b, "to").Str
		if want == "none" || want == "park" || want == "P9" || (stay != nil && stay(b)) {
			want = "dlq"
		}
		if got := places[b]; len(got) != 1 || got[0] != want {
			f.t.Errorf("%s is in %v, want exactly [%s]", b, got, want)
		}
	}
	if len(places) != len(f.bodies) {
		f.t.Errorf("%d distinct bodies across the queues, want %d", len(places), len(f.bodies))
	}
}

func TestReplayMovesEligibleKeepsAttributesReleasesTheRest(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 60, false)
	counts, results, err := f.run(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if counts.Sent != 40 || counts.Failed != 0 || counts.DeleteFailed != 0 || len(results) != 40 {
		t.Fatalf("counts %+v, %d results", counts, len(results))
	}
	// Every released message is visible again at once, not after 60 s.
	if !waitVisible(t, f.c, f.dlq, 20) {
		t.Fatal("the messages not replayed were not released")
	}
	f.wantEachOnce(nil)
	calls := f.proxy.Calls()
	// 60 received in 6 calls (+2 empty), 40 sent: 2 canaries + 4 batches of
	// <=10 per target, the same number of deletes.
	if calls["SendMessageBatch"] > 8 || calls["DeleteMessageBatch"] > 8 {
		t.Errorf("calls %v", calls)
	}
}

func TestReplayFIFOKeepsGroupAndDeduplicates(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 6, true)
	if _, _, err := f.run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	for _, m := range testsupport.Drain(t, f.c, f.target("P1"), time.Second) {
		if g := m.Attributes["MessageGroupId"]; g != "g" {
			t.Errorf("group %q, want the original g", g)
		}
		if d := m.Attributes["MessageDeduplicationId"]; len(d) != 40 {
			t.Errorf("dedup id %q", d)
		}
	}
}

func TestCanaryFindsAMissingTargetBeforeTheRestAreTouched(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 30, false)
	// Send every P2 message to a queue that does not exist.
	route := f.route
	var sendsToMissing atomic.Int32
	f.proxy.SetHook(func(op string, body []byte) ([]byte, *testsupport.Reply) {
		if op == "SendMessageBatch" && strings.Contains(gjson.GetBytes(body, "QueueUrl").Str, "P9") {
			sendsToMissing.Add(1)
		}
		return nil, nil
	})
	counts, results, err := f.run(context.Background(), func(r *sqsmove.Replayer) {
		r.Route = func(m *sqsmove.Message) sqsmove.Route {
			if gjson.Get(m.Body, "to").Str == "P2" {
				return sqsmove.Route{Target: f.target("P9")}
			}
			return route(m)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := sendsToMissing.Load(); n != 1 {
		t.Errorf("%d sends to the missing queue, want 1 (the canary)", n)
	}
	if counts.Sent != 10 || counts.Failed != 10 {
		t.Errorf("counts %+v", counts)
	}
	for _, r := range results {
		if r.Outcome == sqsmove.OutcomeFailed && !strings.Contains(r.Err.Error(), "canary") {
			t.Errorf("failure %v does not say the canary found it", r.Err)
		}
	}
	f.wantEachOnce(func(b string) bool { return gjson.Get(b, "to").Str == "P2" })
}

// A batch where the server accepts some entries and refuses others: only
// the accepted ones are deleted.
func TestPartialBatchFailureDeletesOnlyWhatWasSent(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 30, false)
	toP1 := func(body []byte) bool { return strings.Contains(gjson.GetBytes(body, "QueueUrl").Str, "P1") }
	refuse := func(e gjson.Result) bool { return gjson.Get(e.Get("MessageBody").Str, "n").Int()%2 == 0 }
	// The request goes on without the refused entries...
	f.proxy.SetHook(func(op string, body []byte) ([]byte, *testsupport.Reply) {
		if op != "SendMessageBatch" || !toP1(body) {
			return nil, nil
		}
		var keep []json.RawMessage
		for _, e := range gjson.GetBytes(body, "Entries").Array() {
			if !refuse(e) {
				keep = append(keep, json.RawMessage(e.Raw))
			}
		}
		if len(keep) == 0 {
			return nil, &testsupport.Reply{Status: 200, Body: `{"Successful":[],"Failed":` + failedEntries(body, refuse) + `}`}
		}
		var req map[string]any
		json.Unmarshal(body, &req)
		req["Entries"] = keep
		b, _ := json.Marshal(req)
		return b, nil
	})
	// ...and the response says they failed.
	f.proxy.SetAfter(func(op string, reqBody, respBody []byte) []byte {
		if op != "SendMessageBatch" || !toP1(reqBody) {
			return respBody
		}
		var resp map[string]any
		json.Unmarshal(respBody, &resp)
		resp["Failed"] = json.RawMessage(failedEntries(reqBody, refuse))
		b, _ := json.Marshal(resp)
		return b
	})
	counts, _, err := f.run(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	// P1 messages are n = 0, 3, 6, ...: the even ones (5 of 10) are refused.
	if counts.Failed != 5 || counts.Sent != 15 {
		t.Errorf("counts %+v", counts)
	}
	f.wantEachOnce(func(b string) bool {
		return gjson.Get(b, "to").Str == "P1" && gjson.Get(b, "n").Int()%2 == 0
	})
}

func failedEntries(body []byte, refuse func(gjson.Result) bool) string {
	out := []string{}
	for _, e := range gjson.GetBytes(body, "Entries").Array() {
		if refuse(e) {
			out = append(out, fmt.Sprintf(`{"Id":%q,"Code":"InvalidMessageContents","Message":"injected","SenderFault":true}`, e.Get("Id").Str))
		}
	}
	return "[" + strings.Join(out, ",") + "]"
}

// The first DeleteMessageBatch fails outright; the retry deletes, and
// nothing is left behind twice.
func TestFailedDeletesAreRetried(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 12, false)
	failedOnce := false
	f.proxy.SetHook(func(op string, body []byte) ([]byte, *testsupport.Reply) {
		if op == "DeleteMessageBatch" && !failedOnce {
			failedOnce = true
			return nil, &testsupport.Reply{Status: 500, Body: testsupport.AWSJSONError("InternalError", "injected")}
		}
		return nil, nil
	})
	counts, _, err := f.run(context.Background(), nil)
	if err != nil || counts.DeleteFailed != 0 || counts.Sent != 8 {
		t.Fatalf("counts %+v err %v", counts, err)
	}
	f.wantEachOnce(nil)
}

// Parking re-sends to the DLQ with the delay and deletes the original.
func TestParkResendsWithDelay(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 9, false)
	counts, results, err := f.run(context.Background(), func(r *sqsmove.Replayer) {
		r.Route = func(m *sqsmove.Message) sqsmove.Route {
			if gjson.Get(m.Body, "to").Str == "none" {
				return sqsmove.Route{Park: true, Delay: 900}
			}
			return f.route(m)
		}
	})
	if err != nil || counts.Parked != 3 || counts.Sent != 6 {
		t.Fatalf("counts %+v err %v", counts, err)
	}
	q, err := sqsmove.Describe(context.Background(), f.c, f.dlq)
	if err != nil {
		t.Fatal(err)
	}
	if q.Delayed != 3 || q.Visible != 0 {
		t.Errorf("DLQ after parking: %+v, want 3 delayed", q)
	}
	for _, r := range results {
		if r.Outcome == sqsmove.OutcomeParked && (r.NewID == "" || r.NewID == r.Msg.MessageID) {
			t.Errorf("parked message has no new id: %+v", r)
		}
	}
}

// Batches stay under the request size limit.
func TestBatchesAreSizedByBytes(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 0, false)
	big := strings.Repeat("x", 100<<10)
	for i := range 6 {
		f.bodies = append(f.bodies, fmt.Sprintf(`{"n":%d,"to":"P1","pad":%q}`, i, big))
	}
	testsupport.SendBodies(t, f.c, f.dlq, f.bodies, func(i int) map[string]types.MessageAttributeValue {
		return map[string]types.MessageAttributeValue{"trace": {DataType: aws.String("String"), StringValue: aws.String("t")},
			"blob": {DataType: aws.String("Binary"), BinaryValue: []byte{1, 2, 3}}}
	})
	var mu sync.Mutex
	var sizes []int
	f.proxy.SetHook(func(op string, body []byte) ([]byte, *testsupport.Reply) {
		if op == "SendMessageBatch" {
			mu.Lock()
			sizes = append(sizes, int(gjson.GetBytes(body, "Entries.#").Int()))
			mu.Unlock()
		}
		return nil, nil
	})
	counts, _, err := f.run(context.Background(), nil)
	if err != nil || counts.Sent != 6 {
		t.Fatalf("counts %+v err %v", counts, err)
	}
	// canary 1, then batches of 2 (2 x 100 KiB < 256 KiB < 3 x 100 KiB)
	slices.Sort(sizes)
	if !slices.Equal(sizes, []int{1, 1, 2, 2}) {
		t.Errorf("batch sizes %v", sizes)
	}
}

// A message received twice (its visibility ran out during the scan) is
// held once, with its newest receipt handle, and sent once.
func TestSeenSetHoldsARedeliveredMessageOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 3, false)
	hold := f.newHold(f.api, time.Second)
	ctx := context.Background()
	seen := 0
	hold.Receive(ctx, sqsmove.ReceiveOptions{Wait: time.Second}, func(int, *sqsmove.Message) bool { seen++; return false })
	time.Sleep(1500 * time.Millisecond)
	hold.Receive(ctx, sqsmove.ReceiveOptions{Wait: time.Second}, func(int, *sqsmove.Message) bool { seen++; return false })
	if seen != 3 || hold.Len() != 3 || hold.Redelivered < 3 {
		t.Fatalf("seen %d, held %d, redelivered %d", seen, hold.Len(), hold.Redelivered)
	}
	var refs []sqsmove.Ref
	hold.Each(func(ord int, st sqsmove.State, m *sqsmove.Message) error {
		refs = append(refs, sqsmove.Ref{Ord: ord, Msg: m})
		return nil
	})
	// Only the newest handles delete.
	if failed := hold.Delete(ctx, refs); len(failed) != 0 {
		t.Fatalf("delete with the newest handles: %v", failed)
	}
	if !testsupport.QueueEmpty(t, f.c, f.dlq) {
		t.Fatal("messages left in the DLQ")
	}
}

func TestJournalResume(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "j.ndjson")
	j, err := sqsmove.OpenJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	j.Write(sqsmove.Event{Event: sqsmove.EvSend, IDs: []string{"a", "b", "c"}})
	j.Write(sqsmove.Event{Event: sqsmove.EvSent, ID: "a"})
	j.Write(sqsmove.Event{Event: sqsmove.EvSendFailed, ID: "b"})
	j.Write(sqsmove.Event{Event: sqsmove.EvSend, IDs: []string{"d"}})
	j.Write(sqsmove.Event{Event: sqsmove.EvParked, ID: "d"})
	j.Close()
	// A torn last line, as a kill mid-write leaves.
	fh, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	fh.WriteString(`{"event":"sent","id":"c"`)
	fh.Close()
	r, err := sqsmove.ReadJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	moved := keys(r.Moved)
	uncertain := keys(r.Uncertain)
	if !slices.Equal(moved, []string{"a", "d"}) || !slices.Equal(uncertain, []string{"c"}) {
		t.Fatalf("moved %v uncertain %v", moved, uncertain)
	}
	// A bad line that is not the last one is an error.
	os.WriteFile(path, []byte("garbage\n{\"event\":\"sent\",\"id\":\"a\"}\n"), 0o600)
	if _, err := sqsmove.ReadJournal(path); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("corrupt journal: %v", err)
	}
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func waitVisible(t *testing.T, c *sqs.Client, q string, n int64) bool {
	for range 20 {
		d, err := sqsmove.Describe(context.Background(), c, q)
		if err != nil {
			t.Fatal(err)
		}
		if d.Visible == n {
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}

// Held messages stay invisible past their visibility timeout while the run
// lasts, and come back at once when released.
func TestKeepAliveExtendsVisibility(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 5, false)
	hold := f.newHold(f.api, 2*time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { hold.KeepAlive(ctx, func(err error) { t.Error(err) }); close(done) }()
	if err := hold.Receive(ctx, sqsmove.ReceiveOptions{Wait: time.Second}, func(int, *sqsmove.Message) bool { return false }); err != nil {
		t.Fatal(err)
	}
	time.Sleep(4 * time.Second) // twice the visibility timeout
	q, err := sqsmove.Describe(ctx, f.c, f.dlq)
	if err != nil {
		t.Fatal(err)
	}
	if q.Visible != 0 || q.InFlight != 5 {
		t.Errorf("after 2 visibility timeouts: %d visible, %d in flight; want 0 and 5", q.Visible, q.InFlight)
	}
	cancel()
	<-done
	if n, failures := hold.Release(context.Background()); n != 5 || len(failures) != 0 {
		t.Fatalf("released %d, failures %v", n, failures)
	}
	if !waitVisible(t, f.c, f.dlq, 5) {
		t.Error("released messages are not visible")
	}
}
