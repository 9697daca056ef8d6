package dlacmd

import (
	"context"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/dla/gen"
	"github.com/deadletter/deadletter/internal/recovery"
)

// A FAILED message whose granules' files cannot be written (no key), among
// other objects at concurrency 8. v21 marks each granule failed and
// publishes it, then publishes it again as its upsert returned it: two
// notifications per granule, both failed. What must hold: exactly that,
// counted in the object's sns_published and the summary, which equal what
// the topics received; the object counts as written and is deleted.
func TestSNSFilesFailurePublishedTwiceAtConcurrency8(t *testing.T) {
	e := newRecoverEnv(t, gen.ReferenceSeed(), nil)
	topics := withTopics(t, e)
	bucket := generatedArchive(t, e, 30)
	layout := dla.Layout{Stack: "demo"}
	msg := transformJSON(t, recoverableMessage(t), func(k string) string {
		if k == "key" {
			return "no_key"
		}
		return k
	}, nil)
	key := layout.AreaPrefix(dla.AreaSQS) + "2024-03-01/files-fail"
	if err := archive.NewS3(e.s3, bucket).Put(context.Background(), key, msg); err != nil {
		t.Fatal(err)
	}
	now := func() time.Time { return time.Date(2024, 3, 20, 12, 0, 0, 0, time.UTC) }
	r := runAt(t, now, e.env, "", "recover", "--archive", "s3://"+bucket+"/demo", "--database-url", e.dbURL, "--yes",
		"--offline", "--concurrency", "8", "-o", "ndjson")
	if r.code != 0 && r.code != 3 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var obj map[string]any
	for _, o := range results(t, r.stdout) {
		if o["key"] == key {
			obj = o
		}
	}
	if obj == nil || obj["result"] != "written" || obj["action"] != "deleted" {
		t.Fatalf("object %v", obj)
	}
	gs, _ := obj["granules"].([]any)
	ids := map[string]bool{}
	for _, g := range gs {
		g := g.(map[string]any)
		if g["files_error"] == nil || g["files_error"] == "" {
			t.Fatalf("granule %v: files did not fail", g)
		}
		ids[g["granule_id"].(string)] = true
	}
	if len(ids) == 0 {
		t.Fatalf("no granules: %v", obj)
	}
	pub := obj["sns_published"].(map[string]any)
	if pub["granule"] != float64(2*len(gs)) {
		t.Errorf("object published %v granule notifications, want %d", pub["granule"], 2*len(gs))
	}
	sns, _ := snsSummary(t, r.stdout)
	perGranule := map[string][]string{}
	for _, topic := range recovery.Topics {
		msgs := topics.Messages(t, topic)
		if sns[string(topic)] != float64(len(msgs)) {
			t.Errorf("%s: received %d, summary %v", topic, len(msgs), sns[string(topic)])
		}
		if topic != recovery.TopicGranule {
			continue
		}
		for _, m := range msgs {
			if id := gjson.Get(m, "record.granuleId").String(); ids[id] {
				perGranule[id] = append(perGranule[id], gjson.Get(m, "record.status").String())
			}
		}
	}
	for id := range ids {
		if s := perGranule[id]; len(s) != 2 || s[0] != "failed" || s[1] != "failed" {
			t.Errorf("granule %s published %v, want [failed failed]", id, s)
		}
	}
}
