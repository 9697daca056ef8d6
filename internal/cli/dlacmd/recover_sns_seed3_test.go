package dlacmd

import (
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/recovery"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// The seed-3 archive (expired histories, files failing, schema failures,
// kept PDRs, unreadable objects) at concurrency 8, where the writes and
// their notifications interleave. What must hold: each topic received
// exactly what the summary counts, which is the sum of the objects'
// sns_published; no possible duplicates without a fault.
func TestSNSSeed3CountsMatchTheTopicsAtConcurrency8(t *testing.T) {
	e := newRecoverEnv(t, testsupport.Seed3Seed(t), testsupport.LoadSFN(t, seed3+"/archive/_fixtures/sfn.json"))
	testsupport.UploadSeed3(t, e.s3)
	topics := withTopics(t, e)
	r := runAt(t, time.Now, e.env, "", "recover", "--archive", "s3://demo-internal/demo", "--database-url", e.dbURL,
		"--yes", "--concurrency", "8", "-o", "ndjson")
	if r.code != 3 {
		t.Fatalf("exit %d, want 3 (some objects fail): %s", r.code, r.stderr)
	}
	var perObject recovery.PublishCounts
	for _, o := range results(t, r.stdout) {
		if p, ok := o["sns_published"].(map[string]any); ok && o["type"] == "object" {
			perObject.Execution += int(p["execution"].(float64))
			perObject.Granule += int(p["granule"].(float64))
			perObject.Pdr += int(p["pdr"].(float64))
		}
	}
	sns, dup := snsSummary(t, r.stdout)
	summary := recovery.PublishCounts{Execution: int(sns["execution"].(float64)), Granule: int(sns["granule"].(float64)), Pdr: int(sns["pdr"].(float64))}
	received := recovery.PublishCounts{Execution: len(topics.Messages(t, recovery.TopicExecution)),
		Granule: len(topics.Messages(t, recovery.TopicGranule)), Pdr: len(topics.Messages(t, recovery.TopicPdr))}
	if summary != received || perObject != summary || summary.Execution < 100 {
		t.Fatalf("summary %+v, objects' sum %+v, topics received %+v", summary, perObject, received)
	}
	for _, topic := range recovery.Topics {
		if dup[string(topic)] != float64(0) {
			t.Errorf("possible duplicates %v without a fault", dup)
		}
	}
	t.Logf("seed-3 at concurrency 8: %+v", summary)
}
