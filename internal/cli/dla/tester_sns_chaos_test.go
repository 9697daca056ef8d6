package dla

import (
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

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
func TestTesterSNSLostRepliesAndDenialAtConcurrency8(t *testing.T) {
	e := newRecoverEnv(t, gen.ReferenceSeed(), nil)
	topics := withTopics(t, e)
	bucket := generatedArchive(t, e, 120)
	layout := dla.Layout{Stack: "demo"}
	proxy := testsupport.NewProxy(t, testsupport.SQSEndpoint(t))
	var mu sync.Mutex
	posts, granulePublishes := 0, 0
	proxy.SetLoseReply(func(op string) bool {
		mu.Lock()
		defer mu.Unlock()
		posts++
		return op == "POST" && posts%7 == 0
	})
	proxy.SetHook(func(op string, body []byte) ([]byte, *testsupport.Reply) {
		q, err := url.ParseQuery(string(body))
		if err != nil || q.Get("Action") != "Publish" || q.Get("TopicArn") != topics.Topics.Granule {
			return nil, nil
		}
		mu.Lock()
		defer mu.Unlock()
		if granulePublishes++; granulePublishes < 60 {
			return nil, nil
		}
		return nil, &testsupport.Reply{Status: 403, Body: `<ErrorResponse><Error><Type>Sender</Type><Code>AuthorizationError</Code><Message>denied (test proxy)</Message></Error></ErrorResponse>`}
	})
	t.Setenv("AWS_ENDPOINT_URL_SNS", proxy.URL)
	now := func() time.Time { return time.Date(2024, 3, 20, 12, 0, 0, 0, time.UTC) }
	r := runAt(t, now, e.env, "", "recover", "--archive", "s3://"+bucket+"/demo", "--database-url", e.dbURL, "--yes",
		"--offline", "--concurrency", "8", "-o", "ndjson")
	if r.code != 3 || !strings.Contains(r.stderr, "stopped") {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	got := map[recovery.Topic][]string{}
	for _, topic := range recovery.Topics {
		got[topic] = topics.Messages(t, topic)
	}
	execs, granules := map[string]bool{}, map[string]bool{}
	for _, m := range got[recovery.TopicExecution] {
		execs[gjson.Get(m, "arn").String()] = true
	}
	for _, m := range got[recovery.TopicGranule] {
		granules[gjson.Get(m, "record.granuleId").String()] = true
	}
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
			if o["execution"] == "written" && !execs[o["execution_arn"].(string)] {
				t.Errorf("%s deleted, execution not published", key)
			}
			gs, _ := o["granules"].([]any)
			for _, g := range gs {
				if g := g.(map[string]any); g["outcome"] == "written" && !granules[g["granule_id"].(string)] {
					t.Errorf("%s deleted, granule %v not published", key, g["granule_id"])
				}
			}
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
