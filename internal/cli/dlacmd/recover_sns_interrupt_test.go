package dlacmd

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/cli/iostreams"
	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/dla/gen"
	"github.com/deadletter/deadletter/internal/recovery"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// An interrupt (the command's context cancelled, as Ctrl-C does) that
// lands between a write and its publish: the first Publish request is on
// its way when the context is cancelled. What must hold: the objects in
// flight finish, each with all its notifications published, and only then
// are deleted; nothing new starts; every object not deleted is still in
// sqs/; the summary says interrupted and counts exactly what the topics
// received.
func TestSNSInterruptBetweenWriteAndPublishFinishesWhatIsInFlight(t *testing.T) {
	e := newRecoverEnv(t, gen.ReferenceSeed(), nil)
	topics := withTopics(t, e)
	bucket := generatedArchive(t, e, 60)
	layout := dla.Layout{Stack: "demo"}
	before := testsupport.KeySet(t, e.s3, bucket, layout.AreaPrefix(dla.AreaSQS))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	proxy := testsupport.NewProxy(t, testsupport.SQSEndpoint(t))
	var once sync.Once
	proxy.SetHook(func(op string, body []byte) ([]byte, *testsupport.Reply) {
		if _, _, ok := snsPublish(body); ok {
			once.Do(cancel)
		}
		return nil, nil
	})
	t.Setenv("AWS_ENDPOINT_URL_SNS", proxy.URL)

	ios, _, out, errOut := iostreams.Test()
	getenv := func(k string) string { return e.env[k] }
	ios.SetEnv(getenv)
	f := NewFactory(ios, getenv)
	f.Now = func() time.Time { return time.Date(2024, 3, 20, 12, 0, 0, 0, time.UTC) }
	code := Run(ctx, f, []string{"recover", "--archive", "s3://" + bucket + "/demo", "--database-url", e.dbURL, "--yes",
		"--offline", "--concurrency", "8", "-o", "ndjson"})
	stdout, stderr := out.String(), errOut.String()
	if code == 0 || ctx.Err() == nil {
		t.Fatalf("exit %d, interrupted %v: %s", code, ctx.Err() != nil, stderr)
	}
	rcv := receivedNotifications(t, topics)
	got := rcv.msgs
	after := testsupport.KeySet(t, e.s3, bucket, layout.AreaPrefix(dla.AreaSQS))
	var sum map[string]any
	reported := map[string]bool{}
	deleted := 0
	for _, o := range results(t, stdout) {
		if o["type"] == "summary" {
			sum = o
			continue
		}
		key := o["key"].(string)
		reported[key] = true
		if o["action"] != "deleted" {
			continue
		}
		deleted++
		if after[key] {
			t.Errorf("%s reported deleted, still in sqs/", key)
		}
		rcv.checkDeleted(t, o)
	}
	if sum == nil || sum["interrupted"] != true {
		t.Fatalf("summary %v", sum)
	}
	// Nothing vanished: every object is reported deleted or moved, or still
	// in sqs/.
	for k := range before {
		if !after[k] && !reported[k] {
			t.Errorf("%s gone from sqs/ without a result", k)
		}
	}
	if deleted == 0 || len(after) == 0 {
		t.Fatalf("%d deleted, %d still in sqs/: the interrupt did not land midway", deleted, len(after))
	}
	sns := sum["sns"].(map[string]any)
	for _, topic := range recovery.Topics {
		if sns[string(topic)] != float64(len(got[topic])) {
			t.Errorf("%s: received %d, summary %v", topic, len(got[topic]), sns)
		}
	}
	if !strings.Contains(stderr, "SNS: published") {
		t.Errorf("no SNS line: %s", stderr)
	}
	t.Logf("interrupted at the first publish: %d deleted, %d still in sqs/, %v", deleted, len(after), sns)
}
