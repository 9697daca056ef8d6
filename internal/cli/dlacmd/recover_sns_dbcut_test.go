package dlacmd

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/dla/gen"
	"github.com/deadletter/deadletter/internal/recovery"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// The database is lost after a granule's upsert committed and before the
// re-read its notification needs (the collection, the files, the execution
// URL: CompleteGranule). What must hold: that object is not deleted (its
// granule was written, never published) and stays in sqs/, the run stops
// as for any outage, the summary counts what the topics received; a re-run
// once the database is back publishes the granule and deletes the object.
func TestSNSDatabaseLostBeforeTheGranuleRereadKeepsTheObject(t *testing.T) {
	e := newRecoverEnv(t, gen.ReferenceSeed(), nil)
	topics := withTopics(t, e)
	bucket := generatedArchive(t, e, 40)
	layout := dla.Layout{Stack: "demo"}
	// The first statement of CompleteGranule (cumulusdb/records.go).
	u, err := url.Parse(e.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := testsupport.NewTCPProxy(t, u.Host)
	viaProxy := proxy.ViaProxy(t, e.dbURL)
	proxy.CutBefore("(SELECT e.url FROM executions e JOIN granules_executions ge")
	now := func() time.Time { return time.Date(2024, 3, 20, 12, 0, 0, 0, time.UTC) }
	args := []string{"recover", "--archive", "s3://" + bucket + "/demo", "--database-url", viaProxy, "--yes",
		"--offline", "--concurrency", "1", "-o", "ndjson"}
	r := runAt(t, now, e.env, "", args...)
	if r.code != 3 || !strings.Contains(r.stderr, "stopped") {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var cutObj, sum map[string]any
	for _, o := range results(t, r.stdout) {
		switch {
		case o["type"] == "summary":
			sum = o
		case o["result"] == "left" && cutObj == nil:
			cutObj = o
		}
	}
	if cutObj == nil {
		t.Fatalf("no object left by the cut: %s", r.stdout)
	}
	key := cutObj["key"].(string)
	if !testsupport.KeySet(t, e.s3, bucket, layout.AreaPrefix(dla.AreaSQS))[key] {
		t.Fatalf("%s (result %v, action %v) not in sqs/ after the cut", key, cutObj["result"], cutObj["action"])
	}
	// Its first granule's row is committed, with no notification.
	gs, _ := cutObj["granules"].([]any)
	if len(gs) == 0 {
		t.Fatalf("the object left holds no granule outcome: %v", cutObj)
	}
	gid := gs[0].(map[string]any)["granule_id"].(string)
	conn, err := pgx.Connect(context.Background(), e.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM granules WHERE granule_id = $1`, gid).Scan(&n); err != nil || n != 1 {
		t.Fatalf("granule %s rows %d (%v): the cut did not land after its upsert", gid, n, err)
	}
	sns := sum["sns"].(map[string]any)
	for _, topic := range recovery.Topics {
		msgs := topics.Messages(t, topic)
		if sns[string(topic)] != float64(len(msgs)) {
			t.Errorf("%s: received %d, summary %v", topic, len(msgs), sns)
		}
		for _, m := range msgs {
			if topic == recovery.TopicGranule && gjson.Get(m, "record.granuleId").String() == gid {
				t.Errorf("granule %s published although its re-read never ran", gid)
			}
		}
	}
	// Back: the re-run publishes it and deletes the object.
	proxy.Restore()
	r = runAt(t, now, e.env, "", args...)
	if r.code == 1 || r.code == 2 || testsupport.KeySet(t, e.s3, bucket, layout.AreaPrefix(dla.AreaSQS))[key] {
		t.Fatalf("re-run: exit %d, %s still in sqs/: %s", r.code, key, r.stderr)
	}
	found := false
	for _, m := range topics.Messages(t, recovery.TopicGranule) {
		found = found || gjson.Get(m, "record.granuleId").String() == gid
	}
	if !found {
		t.Errorf("re-run did not publish granule %s", gid)
	}
}
