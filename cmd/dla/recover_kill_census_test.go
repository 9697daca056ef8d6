package main_test

import (
	"bytes"
	"context"
	"math/rand"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/jackc/pgx/v5"
	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/dla/gen"
	"github.com/deadletter/deadletter/internal/recovery"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// killTarget is an archive in S3, a Cumulus database and the three SNS
// topics, as one `dla recover` sees them.
type killTarget struct {
	store  archive.Store
	spec   string
	env    []string
	dbURL  string
	topics map[recovery.Topic]string // ARNs
	queue  string                    // subscribed to the three topics
	bodies map[string]int            // each message of the archive, by its bytes
}

func newKillTarget(t *testing.T, opts gen.Options) *killTarget {
	t.Helper()
	store, spec, env := migrateTarget(t, "s3")
	k := &killTarget{store: store, spec: spec, bodies: map[string]int{}}
	k.dbURL = testsupport.NewCumulusDatabase(t, gen.ReferenceSeed())
	// One queue subscribed to the three topics: one drain reads them all
	// (each notification keeps its envelope, which names its topic).
	snsc, sqsc := testsupport.SNSClient(t), testsupport.SQSClient(t)
	k.queue = testsupport.NewQueue(t, sqsc, "dl-kill-sub-", false)
	k.topics = map[recovery.Topic]string{}
	k.env = append(env, "AWS_ENDPOINT_URL_SNS="+testsupport.SQSEndpoint(t), "DEADLETTER_NO_PROMPT=1")
	for _, topic := range recovery.Topics {
		k.topics[topic] = testsupport.NewTopic(t, snsc, "dl-kill-"+string(topic)+"-")
		testsupport.SubscribeQueue(t, snsc, sqsc, k.topics[topic], k.queue)
		k.env = append(k.env, topic.EnvVar()+"="+k.topics[topic])
	}
	if err := gen.Generate(opts, func(o gen.Object) error {
		k.bodies[string(o.Body)]++
		return store.Put(context.Background(), o.Key, o.Body)
	}); err != nil {
		t.Fatal(err)
	}
	return k
}

func (k *killTarget) args(conc int) []string {
	return []string{"recover", "--archive", k.spec, "--database-url", k.dbURL, "--include-legacy", "--offline", "--yes",
		"--concurrency", strconv.Itoa(conc), "-o", "ndjson"}
}

// finish runs recover to the end and returns its stdout.
func (k *killTarget) finish(t *testing.T, conc int) string {
	t.Helper()
	cmd := exec.Command(dlaBin, k.args(conc)...)
	cmd.Env = k.env
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil && cmd.ProcessState.ExitCode() != 3 {
		t.Fatalf("recover: %v\n%s", err, errOut.String())
	}
	return out.String()
}

// archived counts each message's bytes among the objects in sqs/ and
// failed-sqs/, and fails the test for an object that is no message of the
// archive.
func (k *killTarget) archived(t *testing.T) map[string]int {
	t.Helper()
	bucket := strings.TrimPrefix(strings.TrimSuffix(k.spec, "/demo"), "s3://")
	seen := map[string]int{}
	for _, key := range testsupport.ListKeys(t, testsupport.S3Client(t), bucket, "demo/dead-letter-archive/") {
		if !strings.Contains(key, "/sqs/") && !strings.Contains(key, "/failed-sqs/") {
			continue // the lock object
		}
		b, err := k.store.Get(context.Background(), key)
		if err != nil {
			t.Fatal(err)
		}
		if k.bodies[string(b)] == 0 {
			t.Errorf("%s holds no message of the archive: %.80s", key, b)
		}
		seen[string(b)]++
	}
	return seen
}

// published is what the topics received: the execution ARNs, granule IDs
// and PDR names (a topic gets a notification again when a re-run writes
// its object again; a set is what every run must reach).
func (k *killTarget) published(t *testing.T) map[recovery.Topic]map[string]bool {
	t.Helper()
	out := map[recovery.Topic]map[string]bool{}
	path := map[recovery.Topic]string{recovery.TopicExecution: "arn", recovery.TopicGranule: "record.granuleId", recovery.TopicPdr: "pdrName"}
	of := map[string]recovery.Topic{}
	for _, topic := range recovery.Topics {
		out[topic] = map[string]bool{}
		of[k.topics[topic]] = topic
	}
	for _, m := range testsupport.Drain(t, testsupport.SQSClient(t), k.queue, time.Second) {
		env := gjson.Parse(aws.ToString(m.Body))
		topic, ok := of[env.Get("TopicArn").String()]
		if !ok {
			t.Fatalf("not a notification of the three topics: %s", aws.ToString(m.Body))
		}
		out[topic][gjson.Get(env.Get("Message").String(), path[topic]).String()] = true
	}
	return out
}

// executions are the execution ARNs in the database.
func (k *killTarget) executions(t *testing.T) []string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, k.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, "SELECT arn FROM executions ORDER BY arn")
	if err != nil {
		t.Fatal(err)
	}
	arns, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return arns
}

// lineCounter signals once its n-th line was written.
type lineCounter struct {
	mu    sync.Mutex
	n     int
	at    chan struct{}
	lines int
}

func (w *lineCounter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	before := w.lines
	w.lines += bytes.Count(p, []byte("\n"))
	if before < w.n && w.lines >= w.n {
		close(w.at)
	}
	return len(p), nil
}

// SIGKILL of `dla recover` over S3 with the three SNS topics, at
// concurrency 1 and 8, each run killed once a random number of its
// objects were reported (the tails of the next ones, their notifications
// and moves, then in flight), then a run to the end. The
// census against a run that was never killed: each message is in the
// archive at most once (never copied twice to failed-sqs/), the messages
// left in sqs/ and failed-sqs/ are the same, the database holds the same
// executions, and every execution, granule and PDR that run announced was
// announced here too: no object left the archive before its
// notifications were published.
func TestRecoverSNSSIGKILLLoopDeletesNothingUnannounced(t *testing.T) {
	opts := gen.Options{Stack: "demo", Count: 80, Seed: 17, Days: 2, MinGranules: 1, MaxGranules: 3,
		Start: time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)}
	ref := newKillTarget(t, opts)
	ref.finish(t, 8)
	refLeft, refPub, refExecs := ref.archived(t), ref.published(t), ref.executions(t)
	if len(refPub[recovery.TopicExecution]) < 40 || len(refLeft) == 0 {
		t.Fatalf("the reference run announced %d executions and left %d messages: the archive exercises too little",
			len(refPub[recovery.TopicExecution]), len(refLeft))
	}
	rng := rand.New(rand.NewSource(5))
	for _, conc := range []int{1, 8} {
		k := newKillTarget(t, opts)
		kills := 0
		for range 3 {
			w := &lineCounter{n: 1 + rng.Intn(20), at: make(chan struct{})}
			cmd := exec.Command(dlaBin, k.args(conc)...)
			cmd.Env, cmd.Stdout = k.env, w
			p := testsupport.StartProc(t, cmd)
			exited := make(chan struct{})
			go func() { _ = cmd.Wait(); close(exited) }()
			select {
			case <-w.at:
				time.Sleep(time.Duration(rng.Intn(20)) * time.Millisecond)
				_ = cmd.Process.Kill()
				<-exited
				kills++
			case <-exited:
			case <-time.After(30 * time.Second):
				p.Kill()
				t.Fatalf("concurrency %d: a run neither reported %d objects nor ended: %s", conc, w.n, p.Stderr.String())
			}
		}
		if kills == 0 {
			t.Fatalf("concurrency %d: no run was killed part way (the test proves nothing)", conc)
		}
		k.finish(t, conc)

		left := k.archived(t)
		for body, n := range left {
			if n > k.bodies[body] {
				t.Errorf("concurrency %d: a message is in the archive %d times: %.80s", conc, n, body)
			}
		}
		if !mapsEqual(left, refLeft) {
			t.Errorf("concurrency %d: %d messages left in the archive, %d by the run never killed", conc, len(left), len(refLeft))
		}
		if execs := k.executions(t); !slices.Equal(execs, refExecs) {
			t.Errorf("concurrency %d: %d executions in the database, %d by the run never killed", conc, len(execs), len(refExecs))
		}
		pub := k.published(t)
		for _, topic := range recovery.Topics {
			for id := range refPub[topic] {
				if !pub[topic][id] {
					t.Errorf("concurrency %d: %s %s never announced: its object left the archive unannounced", conc, topic, id)
				}
			}
		}
		t.Logf("concurrency %d: %d runs killed; %d messages left, %d executions announced", conc, kills, len(left), len(pub[recovery.TopicExecution]))
	}
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
