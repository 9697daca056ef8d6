package autorecoverfn_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/dla/gen"
	"github.com/deadletter/deadletter/internal/testsupport"
	"github.com/deadletter/deadletter/internal/testsupport/lambdart"
	"github.com/deadletter/deadletter/internal/workflow/autorecover"
)

const knexText = "KnexTimeoutError: Knex: Timeout acquiring a connection. The pool is probably full. Are you missing a .transacting(trx) call?"

// putOutage writes count generated DLA records dated yesterday, each
// with a Knex timeout, into the archive s3://bucket/s; it returns their
// keys.
func putOutage(t *testing.T, store archive.Store, count int) []string {
	t.Helper()
	var keys []string
	err := gen.Generate(gen.Options{Stack: "s", Count: count, Seed: 43, Start: time.Now().UTC().Add(-30 * time.Hour), Days: 1,
		MinGranules: 1, MaxGranules: 2, Malformed: -1}, func(o gen.Object) error {
		if o.Kind != "dla-record" {
			return nil
		}
		var obj map[string]any
		if err := json.Unmarshal(o.Body, &obj); err != nil {
			return err
		}
		obj["error"] = knexText
		body, _ := json.Marshal(obj)
		keys = append(keys, o.Key)
		return store.Put(context.Background(), o.Key, body)
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	return keys
}

// list is the keys under prefix.
func list(t *testing.T, store archive.Store, prefix string) []string {
	t.Helper()
	var keys []string
	if err := store.List(context.Background(), prefix, false, func(e archive.Entry) error {
		keys = append(keys, e.Key)
		return nil
	}); err != nil && !errors.Is(err, archive.ErrNotFound) {
		t.Fatal(err)
	}
	return keys
}

// The function's real bootstrap under the Lambda runtime harness, against
// versitygw, fauxqs's SNS and PostgreSQL: killed in its first pass once it
// has recovered an object, the next invocation takes the lapsed lock of
// the dead process over and finishes the work; every object is written
// once (deleted from sqs/, none moved, none left), the records of the two
// passes name each object once between them, and one notification says
// what was recovered. A third pass, with nothing left, sends nothing.
func TestTheFunctionDrainsAnArchiveAcrossAKill(t *testing.T) {
	ctx := context.Background()
	s3c := testsupport.S3Client(t)
	bucket := testsupport.NewBucket(t, s3c)
	store := archive.NewS3(s3c, bucket)
	keys := putOutage(t, store, 80)
	dbURL := testsupport.NewCumulusDatabase(t, gen.ReferenceSeed())
	snsc, sqsc := testsupport.SNSClient(t), testsupport.SQSClient(t)
	topic := testsupport.NewTopic(t, snsc, "autorecover-")
	queue := testsupport.NewQueue(t, sqsc, "autorecover-", false)
	testsupport.SubscribeQueue(t, snsc, sqsc, topic, queue)
	sts := testsupport.STSResponder(t, "arn:aws:sts::123456789012:assumed-role/dla-autorecover/fn", "123456789012")

	rt := lambdart.Start(t, lambdart.Function{Bootstrap: lambdart.Build(t, "./cmd/dla-autorecover"), Timeout: 2 * time.Minute,
		Env: lambdart.Env(lambdart.ServiceEnv(t, "s3", "sns"), map[string]string{
			"AWS_ENDPOINT_URL_SFN": testsupport.NewSFNFake(t, nil).URL, "AWS_ENDPOINT_URL_STS": sts,
			"DLA_ARCHIVE": "s3://" + bucket + "/s", "DATABASE_URL": dbURL, "AUTORECOVER_MODE": "recover",
			"AUTORECOVER_TOPIC_ARN": topic, "AUTORECOVER_CONCURRENCY": "2"})})
	rt.KillDuringOnLog(1, `"type":"object"`)
	inv, err := rt.Invoke(ctx, []byte(`{}`))
	if !errors.Is(err, lambdart.ErrCrashed) {
		t.Fatalf("first invocation: %v (%s)\n%s", err, inv.Payload, inv.Logs)
	}
	left := list(t, store, "s/dead-letter-archive/sqs/")
	if len(left) == len(keys) || len(left) == 0 {
		t.Fatalf("killed mid-pass with %d of %d objects left: not mid-pass", len(left), len(keys))
	}

	inv, err = rt.Invoke(ctx, []byte(`{}`))
	if err != nil || inv.FunctionError != nil {
		t.Fatalf("second invocation: %v %+v\n%s", err, inv.FunctionError, inv.Logs)
	}
	var rep autorecover.Report
	if err := json.Unmarshal(inv.Payload, &rep); err != nil {
		t.Fatalf("payload %s: %v", inv.Payload, err)
	}
	if rep.Totals.Written+rep.Totals.Dropped != len(left) || rep.Totals.Failed != 0 || rep.Totals.Left != 0 {
		t.Errorf("second pass: %+v, want the %d objects the first left written", rep.Totals, len(left))
	}
	if got := list(t, store, "s/dead-letter-archive/sqs/"); len(got) != 0 {
		t.Errorf("%d objects left in sqs/", len(got))
	}
	if got := list(t, store, "s/dead-letter-archive/failed-sqs/"); len(got) != 0 {
		t.Errorf("%d objects moved to failed-sqs/", len(got))
	}
	// Each object recorded once by the two passes together (the killed
	// pass's record holds what its chunks got down: at most what it moved).
	if n := testsupport.QueryInt(t, dbURL, `SELECT count(*) FROM executions`); n == 0 {
		t.Error("no execution written")
	}
	msgs := testsupport.Published(t, sqsc, queue, topic)
	if len(msgs) != 1 || !strings.Contains(msgs[0], dla.ErrorClass(knexText)) {
		t.Fatalf("notifications: %d: %q", len(msgs), msgs)
	}

	inv, err = rt.Invoke(ctx, []byte(`{}`))
	if err != nil || inv.FunctionError != nil {
		t.Fatalf("third invocation: %v %+v\n%s", err, inv.FunctionError, inv.Logs)
	}
	if msgs := testsupport.Published(t, sqsc, queue, topic); len(msgs) != 0 {
		t.Errorf("a pass with nothing to do notified: %q", msgs)
	}
}
