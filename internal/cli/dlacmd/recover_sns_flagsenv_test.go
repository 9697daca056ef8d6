package dlacmd

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/jackc/pgx/v5"

	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/dla/gen"
	"github.com/deadletter/deadletter/internal/recovery"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// Topics given partly by flag, partly by v21's environment names, the
// environment's values as a deployment's variables often hold them (a
// trailing newline or space, from a copied console value or a file). What
// must hold: the flag wins for its topic, the variables give the others,
// a value is taken without the white space around it (the flags already
// were), and every notification reaches the topic meant: the run
// recovers everything instead of stopping at its first object with
// NotFound for a topic named "…\n".
func TestSNSTopicsTakenPartlyByFlagPartlyByEnv(t *testing.T) {
	e := newRecoverEnv(t, gen.ReferenceSeed(), nil)
	topics := withTopics(t, e)
	e.env["execution_sns_topic_arn"] = "arn:aws:sns:us-east-1:000000000000:not-this-one"
	e.env["granule_sns_topic_arn"] = topics.Topics.Granule + "\n"
	e.env["pdr_sns_topic_arn"] = " " + topics.Topics.Pdr + " "
	bucket := generatedArchive(t, e, 10)
	now := func() time.Time { return time.Date(2024, 3, 20, 12, 0, 0, 0, time.UTC) }
	r := runAt(t, now, e.env, "", "recover", "--archive", "s3://"+bucket+"/demo", "--database-url", e.dbURL, "--yes",
		"--offline", "-o", "ndjson", "--execution-sns-topic-arn", topics.Topics.Execution)
	if r.code != 0 && r.code != 3 || strings.Contains(r.stderr, "stopped") {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "execution "+topics.Topics.Execution) || !strings.Contains(r.stderr, "granule   "+topics.Topics.Granule+"\n") {
		t.Errorf("plan does not name the topics used:\n%s", r.stderr)
	}
	sns, _ := snsSummary(t, r.stdout)
	for _, topic := range recovery.Topics {
		n := len(topics.Messages(t, topic))
		if sns[string(topic)] != float64(n) || topic != recovery.TopicPdr && n == 0 {
			t.Errorf("%s: received %d, summary %v", topic, n, sns[string(topic)])
		}
	}
}

// A FIFO topic given for one of the three (fauxqs, like SNS, refuses a
// publish there without a MessageGroupId, which v21 never sends). The
// break: recover took it, wrote the first object's rows, failed its
// publish and stopped, every run. What must hold: a usage error before
// anything is written.
func TestSNSFIFOTopicRefusedBeforeAnyWrite(t *testing.T) {
	e := newRecoverEnv(t, gen.ReferenceSeed(), nil)
	topics := withTopics(t, e)
	out, err := topics.SNS.CreateTopic(context.Background(), &sns.CreateTopicInput{
		Name: aws.String("dl-fifo-" + testsupport.RandomHex(4) + ".fifo"), Attributes: map[string]string{"FifoTopic": "true"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { topics.SNS.DeleteTopic(context.Background(), &sns.DeleteTopicInput{TopicArn: out.TopicArn}) })
	bucket := generatedArchive(t, e, 10)
	layout := dla.Layout{Stack: "demo"}
	before := testsupport.KeySet(t, e.s3, bucket, layout.AreaPrefix(dla.AreaSQS))
	conn, err := pgx.Connect(context.Background(), e.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	executions := func() (n int) {
		if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM executions`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	seeded := executions()
	r := runAt(t, time.Now, e.env, "", "recover", "--archive", "s3://"+bucket+"/demo", "--database-url", e.dbURL, "--yes",
		"--offline", "--granule-sns-topic-arn", aws.ToString(out.TopicArn))
	if r.code != 2 || !strings.Contains(r.stderr, "FIFO topic") {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if n := executions(); n != seeded {
		t.Fatalf("%d executions written", n-seeded)
	}
	if after := testsupport.KeySet(t, e.s3, bucket, layout.AreaPrefix(dla.AreaSQS)); len(after) != len(before) {
		t.Fatalf("archive changed: %d objects, %d before", len(after), len(before))
	}
	for _, topic := range recovery.Topics {
		if m := topics.Messages(t, topic); len(m) != 0 {
			t.Errorf("%s: %d published", topic, len(m))
		}
	}
}
