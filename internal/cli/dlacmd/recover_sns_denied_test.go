package dlacmd

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
func TestSNSOneTopicDeniedMidwayAtConcurrency8DeletesOnlyWhatWasPublished(t *testing.T) {
	e := newRecoverEnv(t, gen.ReferenceSeed(), nil)
	topics := withTopics(t, e)
	bucket := generatedArchive(t, e, 120)
	layout := dla.Layout{Stack: "demo"}
	before := testsupport.KeySet(t, e.s3, bucket, layout.AreaPrefix(dla.AreaSQS))
	proxy := testsupport.NewProxy(t, testsupport.SQSEndpoint(t))
	denied := denyTopicAfter(proxy, topics.Topics.Granule, 40)
	t.Setenv("AWS_ENDPOINT_URL_SNS", proxy.URL)
	now := func() time.Time { return time.Date(2024, 3, 20, 12, 0, 0, 0, time.UTC) }
	r := runAt(t, now, e.env, "", "recover", "--archive", "s3://"+bucket+"/demo", "--database-url", e.dbURL, "--yes",
		"--offline", "--concurrency", "8", "-o", "ndjson")
	if r.code != 3 || !strings.Contains(r.stderr, "stopped") || denied() == 0 {
		t.Fatalf("exit %d, %d denied: %s", r.code, denied(), r.stderr)
	}
	rcv := receivedNotifications(t, topics)
	got := rcv.msgs
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
			rcv.checkDeleted(t, o)
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
	t.Logf("%d deleted, %d left by the denial, %d granule publishes denied", deleted, leftByDenial, denied())
}

// snsReceived is what the three topics received: their messages, and the
// execution ARNs and granule ids published.
type snsReceived struct {
	msgs            map[recovery.Topic][]string
	execs, granules map[string]bool
}

// receivedNotifications drains the topics.
func receivedNotifications(t *testing.T, topics *testsupport.NotificationTopics) snsReceived {
	t.Helper()
	rcv := snsReceived{msgs: map[recovery.Topic][]string{}, execs: map[string]bool{}, granules: map[string]bool{}}
	for _, topic := range recovery.Topics {
		rcv.msgs[topic] = topics.Messages(t, topic)
	}
	for _, m := range rcv.msgs[recovery.TopicExecution] {
		rcv.execs[gjson.Get(m, "arn").String()] = true
	}
	for _, m := range rcv.msgs[recovery.TopicGranule] {
		rcv.granules[gjson.Get(m, "record.granuleId").String()] = true
	}
	return rcv
}

// checkDeleted fails the test when an object recover deleted (o, its
// ndjson line) wrote an execution or a granule that no notification
// carries.
func (rcv snsReceived) checkDeleted(t *testing.T, o map[string]any) {
	t.Helper()
	if o["execution"] == "written" && !rcv.execs[o["execution_arn"].(string)] {
		t.Errorf("%s deleted, its execution %v never published", o["key"], o["execution_arn"])
	}
	gs, _ := o["granules"].([]any)
	for _, g := range gs {
		if g := g.(map[string]any); g["outcome"] == "written" && !rcv.granules[g["granule_id"].(string)] {
			t.Errorf("%s deleted, its granule %v never published", o["key"], g["granule_id"])
		}
	}
}

// snsPublish reads an SNS request body (the query protocol): the topic a
// Publish or PublishBatch call publishes to, and how many notifications it
// carries (one, or the batch's entries); ok is false for other calls.
func snsPublish(body []byte) (topicARN string, notifications int, ok bool) {
	q, err := url.ParseQuery(string(body))
	if err != nil {
		return "", 0, false
	}
	switch q.Get("Action") {
	case "Publish":
		return q.Get("TopicArn"), 1, true
	case "PublishBatch":
		for k := range q {
			if strings.HasPrefix(k, "PublishBatchRequestEntries.member.") && strings.HasSuffix(k, ".Id") {
				notifications++
			}
		}
		return q.Get("TopicArn"), notifications, true
	}
	return "", 0, false
}

// denyTopicAfter makes proxy answer AuthorizationError (403) to each call
// publishing to topicARN once it has let the first n notifications through,
// as SNS does once a policy denies it; it returns how many calls it has
// denied so far.
func denyTopicAfter(proxy *testsupport.Proxy, topicARN string, n int) (denied func() int) {
	var mu sync.Mutex
	seen, refused := 0, 0
	proxy.SetHook(func(op string, body []byte) ([]byte, *testsupport.Reply) {
		topic, k, ok := snsPublish(body)
		if !ok || topic != topicARN {
			return nil, nil
		}
		mu.Lock()
		defer mu.Unlock()
		if seen += k; seen <= n {
			return nil, nil
		}
		refused++
		return nil, &testsupport.Reply{Status: 403, Body: `<ErrorResponse><Error><Type>Sender</Type><Code>AuthorizationError</Code><Message>User is not authorized to perform: SNS:Publish (test proxy)</Message></Error></ErrorResponse>`}
	})
	return func() int {
		mu.Lock()
		defer mu.Unlock()
		return refused
	}
}
