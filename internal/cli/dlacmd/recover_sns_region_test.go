package dlacmd

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"

	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/dla/gen"
	"github.com/deadletter/deadletter/internal/testsupport"
)

var credentialRegion = regexp.MustCompile(`Credential=[^/]+/[0-9]{8}/([^/]+)/sns/aws4_request`)

// A topic ARN in another region than the AWS settings' (AWS_REGION
// us-east-1, the execution topic in eu-west-1: an operator's shell set for
// one region, the stack in another). SNS only publishes to a topic through
// its own region's endpoint (AWS answers InvalidParameter: TopicArn
// otherwise; fauxqs does not check, so the test reads the region each
// request was signed for). The break: every publish went to the settings'
// region, so each run stopped at its first object. What must hold: each
// publish goes to its topic's region, and the run recovers everything.
func TestSNSPublishesToATopicInAnotherRegion(t *testing.T) {
	e := newRecoverEnv(t, gen.ReferenceSeed(), nil)
	topics := withTopics(t, e)
	ctx := context.Background()
	eu := sns.NewFromConfig(testsupport.AWSConfig(), func(o *sns.Options) {
		o.BaseEndpoint, o.Region = aws.String(testsupport.SQSEndpoint(t)), "eu-west-1"
	})
	out, err := eu.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String("dl-eu-execution-" + testsupport.RandomHex(4))})
	if err != nil {
		t.Fatal(err)
	}
	euARN := aws.ToString(out.TopicArn)
	t.Cleanup(func() { eu.DeleteTopic(ctx, &sns.DeleteTopicInput{TopicArn: out.TopicArn}) })
	if !strings.HasPrefix(euARN, "arn:aws:sns:eu-west-1:") {
		t.Fatalf("topic %s", euARN)
	}
	queue := testsupport.NewQueue(t, topics.SQS, "dl-eu-sub-", false)
	testsupport.SubscribeQueue(t, eu, topics.SQS, euARN, queue)
	e.env["execution_sns_topic_arn"] = euARN

	// Where each publish was signed for, by topic.
	target, _ := url.Parse(testsupport.SQSEndpoint(t))
	rp := httputil.NewSingleHostReverseProxy(target)
	var mu sync.Mutex
	signed := map[string]map[string]int{} // topic ARN -> region -> notifications published
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if topic, n, ok := snsPublish(body); ok {
			region := "?"
			if m := credentialRegion.FindStringSubmatch(r.Header.Get("Authorization")); m != nil {
				region = m[1]
			}
			mu.Lock()
			if signed[topic] == nil {
				signed[topic] = map[string]int{}
			}
			signed[topic][region] += n
			mu.Unlock()
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	t.Setenv("AWS_ENDPOINT_URL_SNS", srv.URL)

	bucket := generatedArchive(t, e, 10)
	layout := dla.Layout{Stack: "demo"}
	now := func() time.Time { return time.Date(2024, 3, 20, 12, 0, 0, 0, time.UTC) }
	r := runAt(t, now, e.env, "", "recover", "--archive", "s3://"+bucket+"/demo", "--database-url", e.dbURL, "--yes",
		"--offline", "-o", "ndjson")
	if r.code != 0 && r.code != 3 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for arn, regions := range signed {
		want := strings.Split(arn, ":")[3]
		for region, n := range regions {
			if region != want {
				t.Errorf("%d publishes to %s signed for %s", n, arn, region)
			}
		}
	}
	if signed[euARN]["eu-west-1"] == 0 {
		t.Errorf("nothing published to %s: %v", euARN, signed)
	}
	if left := testsupport.ListKeys(t, e.s3, bucket, layout.AreaPrefix(dla.AreaSQS)); strings.Contains(r.stderr, "stopped") {
		t.Errorf("run stopped, %d left: %s", len(left), r.stderr)
	}
	if got := len(testsupport.Published(t, topics.SQS, queue, euARN)); got != signed[euARN]["eu-west-1"] {
		t.Errorf("eu topic received %d", got)
	}
}
