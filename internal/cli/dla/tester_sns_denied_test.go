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

// SNS starts refusing one topic midway through a run at concurrency 8
// (AccessDenied on the granule topic after some publishes: a policy
// changed under the run). What must hold: no object is deleted unless its
// execution and every granule it wrote were published; the objects in
// flight whose publish was refused stay in sqs/; the run stops; each
// topic received exactly what the summary counts as published.
func TestTesterSNSOneTopicDeniedMidwayAtConcurrency8(t *testing.T) {
	e := newRecoverEnv(t, gen.ReferenceSeed(), nil)
	topics := withTopics(t, e)
	bucket := generatedArchive(t, e, 120)
	layout := dla.Layout{Stack: "demo"}
	before := testsupport.KeySet(t, e.s3, bucket, layout.AreaPrefix(dla.AreaSQS))
	proxy := testsupport.NewProxy(t, testsupport.SQSEndpoint(t))
	var mu sync.Mutex
	granulePublishes, denied := 0, 0
	proxy.SetHook(func(op string, body []byte) ([]byte, *testsupport.Reply) {
		q, err := url.ParseQuery(string(body))
		if err != nil || q.Get("Action") != "Publish" || q.Get("TopicArn") != topics.Topics.Granule {
			return nil, nil
		}
		mu.Lock()
		defer mu.Unlock()
		if granulePublishes++; granulePublishes <= 40 {
			return nil, nil
		}
		denied++
		return nil, &testsupport.Reply{Status: 403, Body: `<ErrorResponse><Error><Type>Sender</Type><Code>AuthorizationError</Code><Message>User is not authorized to perform: SNS:Publish (test proxy)</Message></Error></ErrorResponse>`}
	})
	t.Setenv("AWS_ENDPOINT_URL_SNS", proxy.URL)
	now := func() time.Time { return time.Date(2024, 3, 20, 12, 0, 0, 0, time.UTC) }
	r := runAt(t, now, e.env, "", "recover", "--archive", "s3://"+bucket+"/demo", "--database-url", e.dbURL, "--yes",
		"--offline", "--concurrency", "8", "-o", "ndjson")
	if r.code != 3 || !strings.Contains(r.stderr, "stopped") || denied == 0 {
		t.Fatalf("exit %d, %d denied: %s", r.code, denied, r.stderr)
	}
	execs, granules := map[string]bool{}, map[string]bool{}
	got := map[recovery.Topic][]string{}
	for _, topic := range recovery.Topics {
		got[topic] = topics.Messages(t, topic)
	}
	for _, m := range got[recovery.TopicExecution] {
		execs[gjson.Get(m, "arn").String()] = true
	}
	for _, m := range got[recovery.TopicGranule] {
		granules[gjson.Get(m, "record.granuleId").String()] = true
	}
	after := testsupport.KeySet(t, e.s3, bucket, layout.AreaPrefix(dla.AreaSQS))
	leftByDenial, deleted := 0, 0
	var sns map[string]any
	for _, o := range results(t, r.stdout) {
		if o["type"] == "summary" {
			sns = o["sns"].(map[string]any)
			continue
		}
		key := o["key"].(string)
		switch o["action"] {
		case "deleted":
			deleted++
			if after[key] {
				t.Errorf("%s reported deleted, still in sqs/", key)
			}
			if o["execution"] == "written" && !execs[o["execution_arn"].(string)] {
				t.Errorf("%s deleted, its execution %v never published", key, o["execution_arn"])
			}
			gs, _ := o["granules"].([]any)
			for _, g := range gs {
				g := g.(map[string]any)
				if g["outcome"] == "written" && !granules[g["granule_id"].(string)] {
					t.Errorf("%s deleted, its granule %v never published", key, g["granule_id"])
				}
			}
		case "left":
			if !after[key] || !before[key] {
				t.Errorf("%s reported left, not in sqs/", key)
			}
			if strings.Contains(o["error"].(string), "AuthorizationError") {
				leftByDenial++
			}
		}
	}
	if leftByDenial == 0 || deleted == 0 {
		t.Fatalf("%d left by the denial, %d deleted: the fault did not land midway", leftByDenial, deleted)
	}
	for _, topic := range recovery.Topics {
		if sns[string(topic)] != float64(len(got[topic])) {
			t.Errorf("%s: received %d, summary %v", topic, len(got[topic]), sns)
		}
	}
	t.Logf("%d deleted, %d left by the denial, %d granule publishes denied", deleted, leftByDenial, denied)
}
