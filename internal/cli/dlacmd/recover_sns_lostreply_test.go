package dlacmd

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/dla/gen"
	"github.com/deadletter/deadletter/internal/recovery"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// snsReplyLoser sits between recover and fauxqs's SNS and loses the replies
// of the publish calls lose picks, by the call's place among all of them
// (nth, from 1) or by the call it repeats (the first call seen is 1; every
// attempt of one call has the same body): SNS published the notifications,
// recover hears a server error (and the SDK retries the call). lost
// returns how many replies were lost and how many notifications they
// carried.
func snsReplyLoser(t *testing.T, lose func(nth, call int) bool) (lost func() (replies, notifications int)) {
	t.Helper()
	proxy := testsupport.NewProxy(t, testsupport.SQSEndpoint(t))
	var mu sync.Mutex
	n, replies, carried := 0, 0, 0
	seen := map[string]int{} // request body -> which call it is (1, 2, ...)
	proxy.SetLoseReplyOf(func(op string, body []byte) bool {
		_, k, ok := snsPublish(body)
		if !ok {
			return false
		}
		mu.Lock()
		defer mu.Unlock()
		n++
		if seen[string(body)] == 0 {
			seen[string(body)] = len(seen) + 1
		}
		if !lose(n, seen[string(body)]) {
			return false
		}
		replies++
		carried += k
		return true
	})
	t.Setenv("AWS_ENDPOINT_URL_SNS", proxy.URL)
	return func() (int, int) {
		mu.Lock()
		defer mu.Unlock()
		return replies, carried
	}
}

// snsSummary is the summary's "sns" and each topic's count in it.
func snsSummary(t *testing.T, stdout string) (map[string]any, map[string]any) {
	t.Helper()
	for _, o := range results(t, stdout) {
		if o["type"] == "summary" {
			sns := o["sns"].(map[string]any)
			dup, _ := sns["possible_duplicates"].(map[string]any)
			return sns, dup
		}
	}
	t.Fatalf("no summary: %s", stdout)
	return nil, nil
}

// A publish whose reply is lost: SNS published it, the SDK retries it and
// the retry is published too. The topic receives its notifications twice;
// the summary said "published" once and nothing else, so an operator
// comparing it with the topic's subscribers could not account for the
// extra one. What must hold: the object is written and deleted (its
// notification was published), and the summary says how many publishes
// may have been delivered twice: received = published + possible
// duplicates, here exactly (every lost reply's message was delivered).
func TestSNSLostReplyIsCountedAsAPossibleDuplicate(t *testing.T) {
	e := newRecoverEnv(t, gen.ReferenceSeed(), nil)
	topics := withTopics(t, e)
	bucket := generatedArchive(t, e, 20)
	lost := snsReplyLoser(t, func(nth, _ int) bool { return nth == 1 || nth == 3 })
	now := func() time.Time { return time.Date(2024, 3, 20, 12, 0, 0, 0, time.UTC) }
	r := runAt(t, now, e.env, "", "recover", "--archive", "s3://"+bucket+"/demo", "--database-url", e.dbURL, "--yes",
		"--offline", "--concurrency", "1", "-o", "ndjson")
	if r.code != 0 && r.code != 3 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	replies, carried := lost()
	if replies != 2 {
		t.Fatalf("%d replies lost: the faults were not reached", replies)
	}
	for _, o := range results(t, r.stdout) {
		if o["result"] == "left" || o["action"] == "left" || o["type"] == "summary" && o["left"] != float64(0) {
			t.Fatalf("left in place although every publish went through on a retry: %v", o)
		}
	}
	sns, dup := snsSummary(t, r.stdout)
	total := 0
	for _, topic := range recovery.Topics {
		got := len(topics.Messages(t, topic))
		d, _ := dup[string(topic)].(float64)
		total += int(d)
		if float64(got) != sns[string(topic)].(float64)+d {
			t.Errorf("%s: received %d, summary published %v + possible duplicates %v", topic, got, sns[string(topic)], dup[string(topic)])
		}
	}
	if total != carried {
		t.Errorf("possible duplicates %v, want %d (the notifications of the two lost replies)", dup, carried)
	}
	if !strings.Contains(r.stderr, fmt.Sprintf("%d more may have been delivered", carried)) {
		t.Errorf("text summary does not say so:\n%s", r.stderr)
	}
}

// Every reply lost for one publish call: the SDK gives up after its
// attempts, each of which SNS published. Its objects are left (the write
// committed, the publish unconfirmed) and the run stops; the summary
// counts none of them as published, and all of them as possible
// duplicates.
func TestSNSAllRepliesLostLeavesTheObject(t *testing.T) {
	e := newRecoverEnv(t, gen.ReferenceSeed(), nil)
	topics := withTopics(t, e)
	bucket := generatedArchive(t, e, 20)
	layout := dla.Layout{Stack: "demo"}
	before := testsupport.KeySet(t, e.s3, bucket, layout.AreaPrefix(dla.AreaSQS))
	lost := snsReplyLoser(t, func(_, call int) bool { return call == 2 }) // each of the SDK's 3 attempts
	now := func() time.Time { return time.Date(2024, 3, 20, 12, 0, 0, 0, time.UTC) }
	r := runAt(t, now, e.env, "", "recover", "--archive", "s3://"+bucket+"/demo", "--database-url", e.dbURL, "--yes",
		"--offline", "--concurrency", "1", "-o", "ndjson")
	if r.code != 3 || !strings.Contains(r.stderr, "stopped") {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var left map[string]any
	for _, o := range results(t, r.stdout) {
		if o["type"] == "object" && o["result"] == "left" {
			left = o
		}
	}
	if left == nil || !testsupport.KeySet(t, e.s3, bucket, layout.AreaPrefix(dla.AreaSQS))[left["key"].(string)] || !before[left["key"].(string)] {
		t.Fatalf("no object left in place by the lost replies: %s", r.stdout)
	}
	sns, dup := snsSummary(t, r.stdout)
	for _, topic := range recovery.Topics {
		got := len(topics.Messages(t, topic))
		d, _ := dup[string(topic)].(float64)
		if float64(got) != sns[string(topic)].(float64)+d {
			t.Errorf("%s: received %d, summary published %v + possible duplicates %v", topic, got, sns[string(topic)], dup[string(topic)])
		}
	}
	if replies, carried := lost(); replies != 3 || dup == nil || dup["execution"].(float64)+dup["granule"].(float64)+dup["pdr"].(float64) != float64(carried) {
		t.Errorf("possible duplicates %v; %d replies lost carrying %d notifications: the SDK's attempts were not counted", dup, replies, carried)
	}
}
