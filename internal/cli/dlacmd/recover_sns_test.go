package dlacmd

import (
	"context"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/dla/gen"
	"github.com/deadletter/deadletter/internal/recovery"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// SNS in dla recover: the notifications go to topics on fauxqs, each
// subscribed by an SQS queue, and are read back from the queues.

// withTopics points the CLI's SNS client at fauxqs and gives it the three
// topics through v21's environment names.
func withTopics(t *testing.T, e *recoverEnv) *testsupport.NotificationTopics {
	t.Helper()
	topics := testsupport.NewNotificationTopics(t)
	t.Setenv("AWS_ENDPOINT_URL_SNS", testsupport.SQSEndpoint(t))
	e.env["execution_sns_topic_arn"] = topics.Topics.Execution
	e.env["granule_sns_topic_arn"] = topics.Topics.Granule
	e.env["pdr_sns_topic_arn"] = topics.Topics.Pdr
	return topics
}

// seed3SNSDifferences are the notifications recover publishes on the
// seed-3 archive that v21 did not, by the object that causes them. Each
// is an object v21 failed and recover writes, a documented improvement
// (docs/recover.md):
//   - execution history expired (DescribeExecution fails): v21 writes and
//     publishes the execution, then fails with a TypeError before the
//     granules; recover writes the granules without processing times and
//     publishes each one it writes;
//   - detail given as a JSON string: v21 cannot read the message and
//     writes nothing; recover writes and publishes all of it.
//
// Nothing v21 published is missing. Unreadable objects publish nothing
// in either.
var seed3SNSDifferences = []struct {
	key, why string
	extra    []string // "<topic> <key>"
}{
	{"2024-02-14/392a861e-358d-4d17-b558-5b5fa032892d-a1fb0b7b-f33d-4949-bb0d-2d7d45883731", "history expired; RUNNING: two running granules", []string{
		"granule Update|MOD04_L2___61|MOD04_L2.A2024041.0945.061.2024045105152|running",
		"granule Update|MOD04_L2___61|MOD04_L2.A2024010.1405.061.2024026160806|running"}},
	{"2024-02-14/392a861e-358d-4d17-b558-5b5fa032892d-d993c077-a0d8-4aae-aa70-bee8d3f28d2c", "history expired; FAILED: each granule's files fail, so it is published marked failed, then as upserted (failed)", []string{
		"granule Update|MOD04_L2___61|MOD04_L2.A2024041.0945.061.2024045105152|failed",
		"granule Update|MOD04_L2___61|MOD04_L2.A2024041.0945.061.2024045105152|failed",
		"granule Update|MOD04_L2___61|MOD04_L2.A2024010.1405.061.2024026160806|failed",
		"granule Update|MOD04_L2___61|MOD04_L2.A2024010.1405.061.2024026160806|failed"}},
	{"2024-03-05/7ae0f436-9430-4c70-b576-386c808de2d0-5ffdb4cc-b8b4-4025-b520-e17f7a75a672", "history expired; RUNNING", []string{
		"granule Update|MYD09GQ___061|MYD09GQ.A2024002.h06v03.061.2024018125932|running",
		"granule Update|MYD09GQ___061|MYD09GQ.A2024043.h35v00.061.2024062222243|running"}},
	{"2024-03-05/7ae0f436-9430-4c70-b576-386c808de2d0-b3b295b8-2d77-4dab-b997-f35005229a9a", "history expired; SUCCEEDED", []string{
		"granule Update|MYD09GQ___061|MYD09GQ.A2024002.h06v03.061.2024018125932|completed",
		"granule Update|MYD09GQ___061|MYD09GQ.A2024043.h35v00.061.2024062222243|completed"}},
	{"2024-03-09/0fb589c3-fbeb-4654-812c-97a87efe97e6-189278d7-9950-4afe-b148-ad64f6119a70", "history expired; SUCCEEDED", []string{
		"granule Update|MCD43A4___061|MCD43A4.A2024054.h21v02.061.2024062113433|completed",
		"granule Update|MCD43A4___061|MCD43A4.A2024050.h14v12.061.2024070140313|completed"}},
	{"2024-03-10/0912bbd1-633f-4af8-97df-c371b7acb3a0-035f3de4-2d56-413e-8dd8-d6177a0ba039", "history expired; SUCCEEDED", []string{
		"granule Update|MOD04_L2___61|MOD04_L2.A2024058.1405.061.2024075102123|completed"}},
	{"2024-03-10/0912bbd1-633f-4af8-97df-c371b7acb3a0-543ea6e4-f037-43e1-b237-d52a5389eb6c", "history expired; RUNNING after the completed one: the granule is dropped, not published", nil},
	{"2024-03-29/unknown-1e8e66c2-5318-46be-aff7-cb1509ddf84e", "detail as a JSON string; FAILED: the execution, and the granule's files fail (published failed twice)", []string{
		"execution arn:aws:states:us-east-1:123456789012:execution:demo-IngestAndPublishGranule:0e1be317-0d83-453a-bf67-65c3826f4fc5|failed",
		"granule Update|MOD09GQ___006|MOD09GQ.A2024018.h31v05.006.2024031032640|failed",
		"granule Update|MOD09GQ___006|MOD09GQ.A2024018.h31v05.006.2024031032640|failed"}},
}

// TestRecoverSNSParityWithCumulusV21 recovers the seed-3 archive with the
// three topics and compares every notification (as multisets of the
// oracle's keys) with what v21 published, plus exactly the differences
// above.
func TestRecoverSNSParityWithCumulusV21(t *testing.T) {
	e := newRecoverEnv(t, testsupport.Seed3Seed(t), testsupport.LoadSFN(t, seed3+"/archive/_fixtures/sfn.json"))
	testsupport.UploadSeed3(t, e.s3)
	var orc struct {
		SNS map[string]struct {
			Count    int      `json:"count"`
			Messages []string `json:"messages"`
		} `json:"sns"`
	}
	readJSON(t, seed3+"/recovery-oracle.json", &orc)
	topics := withTopics(t, e)
	r := runAt(t, time.Now, e.env, "", "recover", "--archive", "s3://demo-internal/demo", "--database-url", e.dbURL,
		"--yes", "--concurrency", "1", "-o", "ndjson")
	if r.code != 3 {
		t.Fatalf("exit %d, want 3 (some objects fail): %s", r.code, r.stderr)
	}
	objects := map[string]map[string]any{}
	var summary map[string]any
	for _, o := range results(t, r.stdout) {
		switch o["type"] {
		case "object":
			objects[strings.TrimPrefix(o["key"].(string), "demo/dead-letter-archive/sqs/")] = o
		case "summary":
			summary = o
		}
	}

	want := map[recovery.Topic][]string{}
	for _, topic := range recovery.Topics {
		o := orc.SNS[string(topic)]
		if len(o.Messages) != o.Count {
			t.Fatalf("oracle %s: %d messages, count %d", topic, len(o.Messages), o.Count)
		}
		want[topic] = append(want[topic], o.Messages...)
	}
	if n := []int{len(want["execution"]), len(want["granule"]), len(want["pdr"])}; !slices.Equal(n, []int{113, 138, 14}) {
		t.Fatalf("oracle counts %v", n)
	}
	for _, d := range seed3SNSDifferences {
		o := objects[d.key]
		if o == nil {
			t.Fatalf("%s: no result", d.key)
		}
		// The object v21 failed is written here.
		if o["result"] != "written" && o["result"] != "dropped" {
			t.Errorf("%s (%s): result %v %v", d.key, d.why, o["result"], o["error"])
		}
		extra := map[recovery.Topic]int{}
		for _, x := range d.extra {
			topic, key, _ := strings.Cut(x, " ")
			want[recovery.Topic(topic)] = append(want[recovery.Topic(topic)], key)
			extra[recovery.Topic(topic)]++
		}
		// And the differences are this object's own notifications: v21
		// published none of its granules, and its execution only when the
		// history expired (it failed after the execution).
		pub, _ := o["sns_published"].(map[string]any)
		v21Exec := 0
		if strings.HasPrefix(d.why, "history expired") {
			v21Exec = 1
		}
		if pub["granule"] != float64(extra["granule"]) || pub["execution"] != float64(extra["execution"]+v21Exec) {
			t.Errorf("%s published %v, the differences attributed to it: %v", d.key, pub, extra)
		}
	}
	got := map[recovery.Topic][]string{}
	for _, topic := range recovery.Topics {
		got[topic] = topics.Keys(t, topic)
		g, w := testsupport.SortedKeys(got[topic]), testsupport.SortedKeys(want[topic])
		if !slices.Equal(g, w) {
			more, less := multisetDiff(g, w)
			t.Errorf("%s notifications: %d, want %d (v21's %d plus the differences)\n  not expected: %q\n  missing: %q",
				topic, len(g), len(w), orc.SNS[string(topic)].Count, more, less)
		}
	}
	t.Logf("SNS parity: execution %d (v21 %d), granule %d (v21 %d), pdr %d (v21 %d); every difference from %d objects v21 failed and recover writes",
		len(got["execution"]), orc.SNS["execution"].Count, len(got["granule"]), orc.SNS["granule"].Count,
		len(got["pdr"]), orc.SNS["pdr"].Count, len(seed3SNSDifferences))

	// The summary counts what was published.
	sns, _ := summary["sns"].(map[string]any)
	if sns["topics"] != true || sns["published"] != true || sns["execution"] != float64(len(got["execution"])) ||
		sns["granule"] != float64(len(got["granule"])) || sns["pdr"] != float64(len(got["pdr"])) {
		t.Errorf("summary sns %v, published %d/%d/%d", sns, len(got["execution"]), len(got["granule"]), len(got["pdr"]))
	}
	if line := "SNS: published 114 execution, 153 granule, 14 PDR notifications"; !strings.Contains(r.stderr, line) {
		t.Errorf("text summary lacks %q:\n%s", line, r.stderr)
	}
}

// multisetDiff returns what a has more than b, and b more than a.
func multisetDiff(a, b []string) (onlyA, onlyB []string) {
	count := map[string]int{}
	for _, k := range a {
		count[k]++
	}
	for _, k := range b {
		count[k]--
	}
	for k, n := range count {
		for ; n > 0; n-- {
			onlyA = append(onlyA, k)
		}
		for ; n < 0; n++ {
			onlyB = append(onlyB, k)
		}
	}
	sort.Strings(onlyA)
	sort.Strings(onlyB)
	return
}

// generatedArchive puts a small generated archive in a new bucket.
func generatedArchive(t *testing.T, e *recoverEnv, count int) (bucket string) {
	t.Helper()
	bucket = testsupport.NewBucket(t, e.s3)
	store := archive.NewS3(e.s3, bucket)
	ctx := context.Background()
	err := gen.Generate(gen.Options{Stack: "demo", Count: count, Seed: 21, Days: 1, Start: time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)},
		func(o gen.Object) error { return store.Put(ctx, o.Key, o.Body) })
	if err != nil {
		t.Fatal(err)
	}
	return bucket
}

// TestRecoverSNSPublishFailureLeavesTheObject: the execution topic does not
// exist. The first object whose execution is written fails to publish:
// as in v21 the execution row stays committed and the message is not
// done; recover leaves the object in sqs/ (not deleted, not moved), stops,
// and a re-run with the topic fixed publishes and deletes it.
func TestRecoverSNSPublishFailureLeavesTheObject(t *testing.T) {
	e := newRecoverEnv(t, gen.ReferenceSeed(), nil)
	topics := withTopics(t, e)
	bucket := generatedArchive(t, e, 20)
	layout := dla.Layout{Stack: "demo"}
	before := testsupport.KeySet(t, e.s3, bucket, layout.AreaPrefix(dla.AreaSQS))
	good := e.env["execution_sns_topic_arn"]
	e.env["execution_sns_topic_arn"] = good + "-deleted"
	now := func() time.Time { return time.Date(2024, 3, 20, 12, 0, 0, 0, time.UTC) }
	args := []string{"recover", "--archive", "s3://" + bucket + "/demo", "--database-url", e.dbURL, "--yes", "--offline",
		"--concurrency", "1", "-o", "ndjson"}
	r := runAt(t, now, e.env, "", args...)
	if r.code != 3 || !strings.Contains(r.stderr, "stopped") {
		t.Fatalf("exit %d, want 3 and a stop: %s", r.code, r.stderr)
	}
	var failed map[string]any
	for _, o := range results(t, r.stdout) {
		if o["type"] == "object" && o["result"] == "left" {
			failed = o
		}
	}
	if failed == nil || !strings.Contains(failed["error"].(string), "publishing the execution notification") ||
		!strings.Contains(failed["error"].(string), "NotFound") || failed["action"] != "left" {
		t.Fatalf("no object left by the publish failure: %s", r.stdout)
	}
	key := failed["key"].(string)
	after := testsupport.KeySet(t, e.s3, bucket, layout.AreaPrefix(dla.AreaSQS))
	if !after[key] || len(testsupport.ListKeys(t, e.s3, bucket, layout.AreaPrefix(dla.AreaFailed))) > len(before)-len(after) {
		t.Fatalf("%s not left in sqs/ (or moved): %v", key, after[key])
	}
	// The execution was committed before the publish, as in v21.
	conn, err := pgx.Connect(context.Background(), e.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM executions WHERE arn = $1`, failed["execution_arn"]).Scan(&n); err != nil || n != 1 {
		t.Fatalf("execution %v rows %d (%v)", failed["execution_arn"], n, err)
	}
	// No execution was published; the summary counts what the topics
	// received.
	var sns map[string]any
	for _, o := range results(t, r.stdout) {
		if o["type"] == "summary" {
			sns = o["sns"].(map[string]any)
		}
	}
	for _, topic := range recovery.Topics {
		if n := len(topics.Messages(t, topic)); sns[string(topic)] != float64(n) || topic == recovery.TopicExecution && n != 0 {
			t.Errorf("%s: %d received, summary %v", topic, n, sns)
		}
	}
	// A re-run with the topic fixed: the object is written, its execution
	// published, and it is deleted.
	e.env["execution_sns_topic_arn"] = good
	r = runAt(t, now, e.env, "", args...)
	if r.code == 1 || r.code == 2 || testsupport.KeySet(t, e.s3, bucket, layout.AreaPrefix(dla.AreaSQS))[key] {
		t.Fatalf("re-run: exit %d, object still in sqs/: %s", r.code, r.stderr)
	}
	published := false
	for _, k := range topics.Keys(t, recovery.TopicExecution) {
		published = published || strings.HasPrefix(k, failed["execution_arn"].(string)+"|")
	}
	if !published {
		t.Errorf("re-run did not publish execution %v", failed["execution_arn"])
	}
}

// TestRecoverSNSDryRunPublishesNothing: a dry run with the topics counts
// what it would publish and publishes nothing.
func TestRecoverSNSDryRunPublishesNothing(t *testing.T) {
	e := newRecoverEnv(t, gen.ReferenceSeed(), nil)
	topics := withTopics(t, e)
	bucket := generatedArchive(t, e, 20)
	now := func() time.Time { return time.Date(2024, 3, 20, 12, 0, 0, 0, time.UTC) }
	r := runAt(t, now, e.env, "", "recover", "--archive", "s3://"+bucket+"/demo", "--database-url", e.dbURL, "--dry-run",
		"--offline", "-o", "ndjson")
	if r.code != 0 && r.code != 3 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "SNS: nothing is published (dry run)") || !strings.Contains(r.stderr, "nothing published (dry run); would have published") {
		t.Fatalf("plan/summary do not say nothing is published:\n%s", r.stderr)
	}
	var sns map[string]any
	for _, o := range results(t, r.stdout) {
		if o["type"] == "summary" {
			sns = o["sns"].(map[string]any)
		}
	}
	if sns["published"] != false || sns["topics"] != true || sns["execution"] == float64(0) {
		t.Fatalf("summary sns %v", sns)
	}
	for _, topic := range recovery.Topics {
		if m := topics.Messages(t, topic); len(m) != 0 {
			t.Fatalf("dry run published %d %s notifications", len(m), topic)
		}
	}
}

func TestRecoverSNSTopicsAllOrNone(t *testing.T) {
	env := map[string]string{"DEADLETTER_NO_PROMPT": "1", "execution_sns_topic_arn": "arn:aws:sns:us-east-1:1:e"}
	r := run(t, false, env, "", "recover", "--archive", t.TempDir(), "--pdr-sns-topic-arn", "arn:aws:sns:us-east-1:1:p", "--dry-run")
	if r.code != 2 || !strings.Contains(r.stderr, "missing --granule-sns-topic-arn ($granule_sns_topic_arn)") {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	r = run(t, false, env, "", "recover", "--archive", t.TempDir(), "--granule-sns-topic-arn", "arn:aws:sqs:us-east-1:1:q",
		"--pdr-sns-topic-arn", "arn:aws:sns:us-east-1:1:p", "--dry-run")
	if r.code != 2 || !strings.Contains(r.stderr, "granule_sns_topic_arn") || !strings.Contains(r.stderr, "not an SNS topic ARN") {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
}
