package dlacmd

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/dla/gen"
	"github.com/deadletter/deadletter/internal/recovery"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// SNS misbehaving every way at once at concurrency 8: every 7th reply
// lost (SNS published; the SDK retries), and from the 60th granule
// publish on the granule topic denied. What must hold, per topic:
// published <= received <= published + possible duplicates; no object
// deleted unless its execution and each granule it wrote reached the
// topics; every object reported left is still in sqs/.
func TestSNSLostRepliesAndDenialAtConcurrency8DeleteOnlyWhatWasPublished(t *testing.T) {
	e := newRecoverEnv(t, gen.ReferenceSeed(), nil)
	topics := withTopics(t, e)
	bucket := generatedArchive(t, e, 120)
	layout := dla.Layout{Stack: "demo"}
	proxy := testsupport.NewProxy(t, testsupport.SQSEndpoint(t))
	var mu sync.Mutex
	posts := 0
	proxy.SetLoseReply(func(op string) bool {
		mu.Lock()
		defer mu.Unlock()
		posts++
		return op == "POST" && posts%7 == 0
	})
	denyTopicAfter(proxy, topics.Topics.Granule, 59)
	t.Setenv("AWS_ENDPOINT_URL_SNS", proxy.URL)
	now := func() time.Time { return time.Date(2024, 3, 20, 12, 0, 0, 0, time.UTC) }
	r := runAt(t, now, e.env, "", "recover", "--archive", "s3://"+bucket+"/demo", "--database-url", e.dbURL, "--yes",
		"--offline", "--concurrency", "8", "-o", "ndjson")
	if r.code != 3 || !strings.Contains(r.stderr, "stopped") {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	rcv := receivedNotifications(t, topics)
	got := rcv.msgs
	after := testsupport.KeySet(t, e.s3, bucket, layout.AreaPrefix(dla.AreaSQS))
	sns, dup := snsSummary(t, r.stdout)
	deleted, left := 0, 0
	for _, o := range results(t, r.stdout) {
		if o["type"] != "object" {
			continue
		}
		key := o["key"].(string)
		switch o["action"] {
		case "deleted":
			deleted++
			rcv.checkDeleted(t, o)
		case "left":
			left++
			if !after[key] {
				t.Errorf("%s reported left, not in sqs/", key)
			}
		}
	}
	lost := 0
	for _, topic := range recovery.Topics {
		p, d, n := sns[string(topic)].(float64), dup[string(topic)].(float64), float64(len(got[topic]))
		lost += int(d)
		if n < p || n > p+d {
			t.Errorf("%s: received %v, published %v, possible duplicates %v", topic, n, p, d)
		}
	}
	if deleted == 0 || left == 0 || lost == 0 {
		t.Fatalf("%d deleted, %d left, %d possible duplicates: the faults did not land", deleted, left, lost)
	}
	t.Logf("%d deleted, %d left, summary %v", deleted, left, sns)
}
